import { CliError, EXIT } from "./errors.js";

const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400 };

/** `24h`, `1h30m`, `7d`, `90s` or plain seconds → whole seconds; `flag` names the option in the error. */
export function parseDuration(raw: string, flag: string): number {
  const text = raw.trim();
  if (/^\d+$/.test(text)) return Number(text);
  const parts = [...text.matchAll(/(\d+)([smhd])/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join("") !== text) {
    throw new CliError(`${flag}: "${raw}" is not a duration (e.g. 90s, 15m, 24h, 7d, 1h30m)`, EXIT.usage);
  }
  return parts.reduce((sum, p) => sum + Number(p[1]) * UNIT_SECONDS[p[2]!]!, 0);
}

/** A short human rendering of a span of seconds: `59m`, `2h5m`, `3d`. */
export function formatSeconds(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s}s`;
  const d = Math.floor(s / 86400);
  const h = Math.floor((s % 86400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  return [d ? `${d}d` : "", h ? `${h}h` : "", m && !d ? `${m}m` : ""].join("") || `${s}s`;
}
