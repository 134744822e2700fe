// How the web view answers: every response carries its security headers, and HEAD gets the
// headers without the body.
import type { IncomingMessage, ServerResponse } from "node:http";

/** The headers of every response: the page loads only its own script and style, is never framed, cached or sniffed. */
export const SECURITY_HEADERS = {
  // Everything the page loads is its own; no inline script or style, no frames, no forms.
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cache-control": "no-store",
};

/** Answers with a whole body (none for HEAD). */
export function send(
  res: ServerResponse,
  req: IncomingMessage,
  status: number,
  contentType: string,
  body: string,
  extra: Record<string, string> = {},
): void {
  res.writeHead(status, { ...SECURITY_HEADERS, "content-type": contentType, "content-length": String(Buffer.byteLength(body)), ...extra });
  res.end(req.method === "HEAD" ? undefined : body);
}
