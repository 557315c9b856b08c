/** True when `entry` (a path under dist/, relative to the checkout) exists and no file under src/ or gen/ is newer than it. */
export function distIsCurrent(entry: string): boolean;
