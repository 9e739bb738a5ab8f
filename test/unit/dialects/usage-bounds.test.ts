/**
 * Token counts an upstream reports reach a translated answer only as whole numbers from 0
 * to MAX_TOKENS_PER_REQUEST: every translator reads them through usageCounts (a chat
 * answer) or chatUsage (an Anthropic one). A 1e308 passed on summed to Infinity, which a
 * client read as null.
 */
import { describe, expect, it } from "vitest";
import { usageCounts } from "../../../src/core/dialects/chat";
import { chatUsage } from "../../../src/core/dialects/anthropic-to-chat";
import { MAX_TOKENS_PER_REQUEST } from "../../../src/core/routewise/bounds";

describe("reported token counts in translated answers", () => {
  it("keeps whole counts within the bound, the largest included", () => {
    expect(usageCounts({ prompt_tokens: 12, completion_tokens: MAX_TOKENS_PER_REQUEST, prompt_tokens_details: { cached_tokens: 4 } })).toEqual({ prompt: 12, output: MAX_TOKENS_PER_REQUEST, cached: 4, reasoning: 0 });
  });

  it("reads a count past the bound, negative or not a number as 0, so no sum leaves the finite", () => {
    for (const bad of [1e308, MAX_TOKENS_PER_REQUEST + 1, -7, Number.NaN, "12"]) {
      expect(usageCounts({ prompt_tokens: bad as number, completion_tokens: bad as number })).toEqual({ prompt: 0, output: 0, cached: 0, reasoning: 0 });
    }
    const anthropic = chatUsage({ input_tokens: 1e308, output_tokens: 1e308, cache_read_input_tokens: 1e308 });
    expect(anthropic).toEqual({ prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 });
    expect(JSON.parse(JSON.stringify(chatUsage({ input_tokens: 5, output_tokens: 1e300, cache_read_input_tokens: 2 })))).toEqual({ prompt_tokens: 7, completion_tokens: 0, total_tokens: 7, prompt_tokens_details: { cached_tokens: 2 } });
  });
});
