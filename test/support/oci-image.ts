// A tiny container image the registry tests push: an OCI image layout (the directory format
// skopeo reads as `oci:<dir>:<tag>`) holding one gzip'd tar layer of a single file, its config
// and its manifest. Everything is made here, byte for byte the same for the same content: the
// same content gives the same manifest digest, another content another one.
import { createHash } from "node:crypto";
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { isAbsolute, join, resolve } from "node:path";
import { gzipSync } from "node:zlib";

const MANIFEST_TYPE = "application/vnd.oci.image.manifest.v1+json";
const INDEX_TYPE = "application/vnd.oci.image.index.v1+json";
const CONFIG_TYPE = "application/vnd.oci.image.config.v1+json";
const LAYER_TYPE = "application/vnd.oci.image.layer.v1.tar+gzip";
const REF_NAME = "org.opencontainers.image.ref.name";

/** The file the layer holds. */
export const LAYER_FILE = "hello.txt";
const DEFAULT_CONTENT = "hello from the platform's registry tests\n";
/** A test image stays tiny: content is bounded. */
export const MAX_CONTENT_BYTES = 1024 * 1024;
/** Tags as the distribution spec allows them: [a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}. */
const TAG = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$/;
/** Every file in the layer is dated 2000-01-01, so the bytes do not depend on when the test ran. */
const MTIME = 946_684_800;

export interface OciImage {
  layoutDir: string;
  /** What skopeo takes as a source: `oci:<layoutDir>:<tag>`. */
  reference: string;
  /** sha256:… of the manifest: what a registry reports for the pushed tag. */
  manifestDigest: string;
  /** sha256:… of the gzip'd layer blob. */
  layerDigest: string;
}

const sha256 = (data: Uint8Array) => `sha256:${createHash("sha256").update(data).digest("hex")}`;

/** A ustar header block (POSIX.1-1988) for a regular file: 512 bytes, numbers in octal. */
function tarHeader(name: string, size: number): Buffer {
  const header = Buffer.alloc(512);
  const put = (offset: number, length: number, value: string) => header.write(value, offset, length, "ascii");
  const octal = (offset: number, length: number, value: number) => put(offset, length, `${value.toString(8).padStart(length - 1, "0")}\0`);
  put(0, 100, name);
  octal(100, 8, 0o644); // mode
  octal(108, 8, 0); // uid
  octal(116, 8, 0); // gid
  octal(124, 12, size);
  octal(136, 12, MTIME);
  put(148, 8, "        "); // the checksum counts its own field as spaces
  put(156, 1, "0"); // regular file
  put(257, 6, "ustar\0");
  put(263, 2, "00");
  put(265, 32, "root");
  put(297, 32, "root");
  let sum = 0;
  for (const byte of header) sum += byte;
  put(148, 8, `${sum.toString(8).padStart(6, "0")}\0 `);
  return header;
}

/** A tar archive of one file: header, data padded to 512 bytes, two zero blocks at the end. */
export function tarOfOneFile(name: string, data: Uint8Array): Buffer {
  if (!/^[A-Za-z0-9._-]{1,99}$/.test(name)) throw new Error(`tar member name ${JSON.stringify(name)}: 1 to 99 of [A-Za-z0-9._-]`);
  const padding = (512 - (data.length % 512)) % 512;
  return Buffer.concat([tarHeader(name, data.length), data, Buffer.alloc(padding), Buffer.alloc(1024)]);
}

async function writeBlob(layoutDir: string, data: Uint8Array): Promise<{ digest: string; size: number }> {
  const digest = sha256(data);
  await writeFile(join(layoutDir, "blobs", "sha256", digest.slice("sha256:".length)), data);
  return { digest, size: data.length };
}

interface IndexEntry {
  mediaType: string;
  digest: string;
  size: number;
  annotations?: Record<string, string>;
}

/**
 * Writes the image into the OCI image layout `dir` (made if missing) under `tag`; other tags
 * already in the layout stay. `content` is what the layer's one file holds.
 */
export async function buildOciImage(dir: string, options: { tag: string; content?: string | Uint8Array }): Promise<OciImage> {
  const { tag, content = DEFAULT_CONTENT } = options;
  if (typeof dir !== "string" || dir === "" || dir.includes("\0")) throw new Error("buildOciImage: dir must be a non-empty path");
  // skopeo splits `oci:<dir>:<tag>` at the colon.
  if (dir.includes(":")) throw new Error(`buildOciImage: dir ${JSON.stringify(dir)} has a colon, which the oci: reference cannot carry`);
  if (typeof tag !== "string" || !TAG.test(tag))
    throw new Error(`buildOciImage: tag ${JSON.stringify(String(tag).slice(0, 200))} is not a valid tag`);
  if (typeof content !== "string" && !(content instanceof Uint8Array)) throw new Error("buildOciImage: content must be a string or bytes");
  const data = typeof content === "string" ? Buffer.from(content, "utf8") : content;
  if (data.length > MAX_CONTENT_BYTES) throw new Error(`buildOciImage: content of ${data.length} bytes is over ${MAX_CONTENT_BYTES}`);

  const layoutDir = isAbsolute(dir) ? dir : resolve(dir);
  await mkdir(join(layoutDir, "blobs", "sha256"), { recursive: true });
  await writeFile(join(layoutDir, "oci-layout"), `${JSON.stringify({ imageLayoutVersion: "1.0.0" })}\n`);

  const tar = tarOfOneFile(LAYER_FILE, data);
  // gzip's header carries no name and a zero time here: the same tar gives the same bytes.
  const layer = await writeBlob(layoutDir, gzipSync(tar, { level: 9 }));
  const config = await writeBlob(
    layoutDir,
    Buffer.from(
      JSON.stringify({
        architecture: "amd64",
        os: "linux",
        config: { Cmd: ["/bin/cat", `/${LAYER_FILE}`] },
        rootfs: { type: "layers", diff_ids: [sha256(tar)] },
      }),
    ),
  );
  const manifestBytes = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: MANIFEST_TYPE,
      config: { mediaType: CONFIG_TYPE, ...config },
      layers: [{ mediaType: LAYER_TYPE, ...layer }],
    }),
  );
  const manifest = await writeBlob(layoutDir, manifestBytes);

  const indexFile = join(layoutDir, "index.json");
  const previous = await readFile(indexFile, "utf8").then(
    (text) => (JSON.parse(text) as { manifests?: IndexEntry[] }).manifests ?? [],
    () => [] as IndexEntry[],
  );
  const manifests = [
    ...previous.filter((m) => m.annotations?.[REF_NAME] !== tag),
    { mediaType: MANIFEST_TYPE, ...manifest, annotations: { [REF_NAME]: tag } },
  ];
  const temporary = `${indexFile}.${process.pid}`;
  await writeFile(temporary, `${JSON.stringify({ schemaVersion: 2, mediaType: INDEX_TYPE, manifests })}\n`);
  await rename(temporary, indexFile);

  return { layoutDir, reference: `oci:${layoutDir}:${tag}`, manifestDigest: manifest.digest, layerDigest: layer.digest };
}
