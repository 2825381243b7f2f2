import { formatCount } from '../src/format';

describe('formatCount', () => {
  it('keeps the digits', () => {
    expect(formatCount(1.5, { digits: 1 })).toBe('1.5');
  });
});
