import fc from 'fast-check';
import { compareUtf8 } from '../../../src/core/exports/formats/parquet-columns';

/**
 * Parquet orders BYTE_ARRAY statistics by the bytes written. compareUtf8 must agree with a byte
 * comparison of what Buffer writes for any string, lone surrogates (written as U+FFFD) included:
 * a wrong min or max lets a reader skip a row group that holds the rows it asked for.
 */
describe('compareUtf8', () => {
  const sign = (n: number) => Math.sign(n);
  // Code units from every range that matters: ASCII, the BMP below and above the surrogates, high and low surrogates.
  const unit = fc.oneof(
    fc.integer({ min: 0x20, max: 0x7e }),
    fc.integer({ min: 0xd7f0, max: 0xd810 }),
    fc.integer({ min: 0xdbf0, max: 0xdc10 }),
    fc.integer({ min: 0xdff0, max: 0xe010 }),
    fc.integer({ min: 0xfff0, max: 0xffff }),
  );
  const text = fc.array(unit, { maxLength: 8 }).map((units) => String.fromCharCode(...units));

  it('orders any two strings as Buffer.compare orders their UTF-8 bytes', () => {
    fc.assert(
      fc.property(text, text, (a, b) => {
        expect(sign(compareUtf8(a, b))).toBe(Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8')));
      }),
      { numRuns: 5000 },
    );
  });

  it('puts a lone surrogate where its U+FFFD goes, not with the characters beyond the BMP', () => {
    expect(compareUtf8('\uDE00 Travel', '\u{1F600} Fun')).toBeLessThan(0);
    expect(compareUtf8('x\uD800', 'x\uFFFF')).toBeLessThan(0);
    expect(compareUtf8('x\uD800', 'x\uD801')).toBe(0);
  });
});
