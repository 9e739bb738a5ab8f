const CHARS_PER_TOKEN = 4; // the usual rule of thumb for English text in BPE tokenizers

/** Tokens a text of `chars` characters is estimated to hold, before a provider counts them. */
export function estimateTokens(chars: number): number {
  return Math.ceil(chars / CHARS_PER_TOKEN);
}
