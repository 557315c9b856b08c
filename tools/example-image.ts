// `npm run example-image -- <dir> [tag]`: writes a tiny OCI image (one file, a few hundred bytes)
// as an OCI layout in <dir> and prints the skopeo source naming it, so that the registry can be
// tried without pulling anything from the internet (docs/registry.md, "Running the image registry").
import { buildOciImage } from "../test/support/oci-image.js";

const [dir, tag = "v1"] = process.argv.slice(2);
if (!dir) {
  process.stderr.write("usage: npm run example-image -- <directory> [tag]\n");
  process.exit(2);
}
try {
  const image = await buildOciImage(dir, { tag, content: `hello from ${tag}\n` });
  process.stdout.write(`${image.reference}\n`);
  process.stderr.write(`manifest ${image.manifestDigest}\n`);
} catch (e) {
  process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
}
