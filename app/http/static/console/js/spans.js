// Citation offsets are Python str indices: Unicode code points, not JavaScript's UTF-16 code
// units. An astral character (😀, 𠮷) is one code point but two code units, so slicing a JS
// string with the server's offsets would shift every span after it.

/** Split `text` at code-point offsets [start, end): {before, span, after}. */
export function splitByCodePoints(text, start, end) {
  let cp = 0;
  let i = 0;
  let from = -1;
  let to = -1;
  while (i <= text.length) {
    if (cp === start && from < 0) from = i;
    if (cp === end) {
      to = i;
      break;
    }
    if (i === text.length) break;
    const code = text.codePointAt(i);
    i += code > 0xffff ? 2 : 1;
    cp += 1;
  }
  if (from < 0 || to < 0) throw new RangeError(`span ${start}–${end} is outside the text (${cp} code points)`);
  return { before: text.slice(0, from), span: text.slice(from, to), after: text.slice(to) };
}

/** Hex SHA-256 of the UTF-8 text, or null where Web Crypto is unavailable (non-secure origin). */
export async function sha256Hex(text) {
  if (!globalThis.crypto || !crypto.subtle) return null;
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}
