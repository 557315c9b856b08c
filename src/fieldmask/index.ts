export { applyUpdate, setFieldPaths, isOutputOnly } from "./update-mask.js";
