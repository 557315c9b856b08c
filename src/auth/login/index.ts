export { loginRoutes, type LoginDeps, type LoginRoute } from "./login-routes.js";
export type { LoginErrorCode } from "./login-error.js";
export { devIssuer } from "./dev-provider.js";
