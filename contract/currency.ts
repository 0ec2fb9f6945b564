/**
 * The one rule for a company's default currency, wherever it is set: `acctops export
 * --default-currency`, `acctops companies add --default-currency` (the registry's `add`) and
 * cdk.json's `stages.<stage>.companies[].defaultCurrency` (lib/config/stage.ts). Here because
 * lib may not import src (docs/architecture.md, decision 4), and a code the synth accepts must
 * be one `add` accepts too.
 */

/** What a currency code must be, in words: the message of each place that takes one. */
export const CURRENCY_CODE_EXPECTED = "expected an ISO 4217 currency code that this Node's Intl lists, such as EUR, GBP or CHF";

/**
 * An ISO 4217 alphabetic code the runtime's Intl lists, in upper case (`gbp` is read as GBP), or
 * undefined. Intl.NumberFormat alone would take any three letters, and a typo would then label a
 * month's transactions with a currency that does not exist.
 */
export function isoCurrencyCode(raw: string): string | undefined {
  const code = raw.trim().toUpperCase();
  return /^[A-Z]{3}$/.test(code) && Intl.supportedValuesOf('currency').includes(code) ? code : undefined;
}
