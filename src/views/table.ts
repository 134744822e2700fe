// Plain-text tables and ages as kubectl prints them: upper-case headers, columns padded to
// their widest cell plus three spaces, ages in kubectl's human units (45s, 3m20s, 5h, 2d3h).

/** Renders rows under a header, kubectl style; the last column is not padded. */
export function renderTable(header: string[], rows: string[][]): string {
  const all = [header, ...rows];
  const widths = header.map((_, i) => Math.max(...all.map((r) => (r[i] ?? "").length)));
  return (
    all
      .map((r) =>
        r
          .map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd((widths[i] ?? 0) + 3)))
          .join("")
          .trimEnd(),
      )
      .join("\n") + "\n"
  );
}

/** kubectl's HumanDuration: how long ago, in at most two units. */
export function humanDuration(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 120) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 10) return s % 60 === 0 ? `${m}m` : `${m}m${s % 60}s`;
  if (m < 180) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 8) return m % 60 === 0 ? `${h}h` : `${h}h${m % 60}m`;
  if (h < 48) return `${h}h`;
  const d = Math.floor(h / 24);
  if (h < 24 * 8) return h % 24 === 0 ? `${d}d` : `${d}d${h % 24}h`;
  if (d < 365 * 2) return `${d}d`;
  const y = Math.floor(d / 365);
  if (d < 365 * 8) return d % 365 === 0 ? `${y}y` : `${y}y${d % 365}d`;
  return `${y}y`;
}

/** The age of a timestamp at `now`, or "<unknown>" as kubectl prints a missing one. */
export function age(timestamp: string | Date | undefined, now: number): string {
  if (timestamp === undefined) return "<unknown>";
  const t = typeof timestamp === "string" ? Date.parse(timestamp) : timestamp.getTime();
  return Number.isNaN(t) ? "<unknown>" : humanDuration(now - t);
}

/** A score or confidence as the CLI prints it (two decimals), "" when absent. */
export function fixed2(n: number | undefined): string {
  return n === undefined ? "" : n.toFixed(2);
}

/** Text on one line, cut to `max` characters with an ellipsis. */
export function oneLine(s: string | undefined, max = Infinity): string {
  const flat = (s ?? "").replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, Math.max(0, max - 1))}…` : flat;
}
