export const clamp = (n: number, low: number, high: number): number => Math.min(high, Math.max(low, n));
