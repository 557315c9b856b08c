// Part of `npm run build`: makes the cluster a new embedded store is copied from, in
// dist/pglite-template, unless the one there was made by the installed PGlite already
// (src/db/pglite-template.ts; docs/design.md, "Storage").
import { defaultTemplateDir, makePgliteTemplate } from "../dist/src/db/pglite-template.js";

const dir = defaultTemplateDir();
const t0 = performance.now();
const outcome = await makePgliteTemplate(dir);
process.stderr.write(
  outcome === "made"
    ? `made the embedded store's template in ${dir} (${Math.round(performance.now() - t0)} ms)\n`
    : `the embedded store's template in ${dir} is current\n`,
);
