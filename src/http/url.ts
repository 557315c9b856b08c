/** `url` without its trailing slashes: how this service compares and joins its own URLs and issuers. */
export function withoutTrailingSlash(url: string): string {
  return url.replace(/\/+$/, "");
}
