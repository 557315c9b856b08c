/** The few HTML pages of the login: plain, self-contained, every value escaped. */

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** Response headers of every login page: not cached, not framed, no referrer (a URL may hold a code). */
export const PAGE_HEADERS = {
  "content-type": "text/html; charset=utf-8",
  "cache-control": "no-store",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  "x-content-type-options": "nosniff",
  "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'",
};

/** A whole page around `body` (trusted HTML: callers escape what they put in it). */
export function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:28rem;margin:4rem auto;padding:0 1rem;color:#222}
label{display:block;margin:1rem 0 .25rem}input{width:100%;padding:.4rem;box-sizing:border-box}
button{margin-top:1.25rem;padding:.5rem 1rem}.error{color:#a00}.muted{color:#666;font-size:.9rem}</style>
</head><body><h1>${escapeHtml(title)}</h1>
${body}
</body></html>`;
}

/** The page shown when the browser cannot be sent back to the CLI. */
export function errorPage(title: string, message: string): string {
  return page(
    title,
    `<p class="error" id="error">${escapeHtml(message)}</p><p class="muted">Start the sign-in again from the command line.</p>`,
  );
}
