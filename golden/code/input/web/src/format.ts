import { clamp } from './math';

export interface FormatOptions {
  digits: number;
}

export function formatCount(n: number, options: FormatOptions): string {
  return clamp(n, 0, 1e9).toFixed(options.digits);
}

export class Formatter {
  constructor(private readonly options: FormatOptions) {}
  format(n: number): string {
    return formatCount(n, this.options);
  }
  private reset() {}
}

const unused = () => 0;
