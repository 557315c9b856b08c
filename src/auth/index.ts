export { SigningKeys } from "./signing-keys.js";
export { TokenService, API_TOKEN_TTL_SECONDS, type MintedToken, type VerifiedToken } from "./tokens.js";
export { authenticate, bearerToken } from "./principal.js";
export { openidConfiguration, jwks } from "./well-known.js";
export { bootstrapAdminToken, writeAdminToken } from "./bootstrap.js";
export { OidcIssuers } from "./oidc-issuers.js";
export { OutboundBudgets, type OutboundLimits } from "./outbound-budgets.js";
export { ExchangeLimits, PerMinuteLimit } from "./exchange-limits.js";
export { exchangeIdentity, exchangeToken, type TokenExchangeDeps } from "./token-exchange.js";
