/**
 * The routing-quality bench's workloads: seeded generators of chat requests. The same
 * seed and sizes give the same requests, byte for byte, so every policy is measured on
 * the same sequence.
 *
 * A workload is a list of conversations. A conversation's turns are played in order by
 * one client, each after the previous answer (a multi-turn session); every other
 * workload has one-turn conversations. Assistant turns resent in a history are made up
 * here rather than copied from the answers: the fake replica caches prompt blocks only
 * (never output), so what the assistant said changes no hit, and the requests stay
 * independent of timing.
 */

export type Role = "system" | "user" | "assistant";

export interface ChatMessage {
  role: Role;
  content: string;
}

export interface ChatRequest {
  messages: ChatMessage[];
  /** max_tokens: the answer's length in tokens. */
  maxTokens: number;
}

export interface Conversation {
  /** Who sends it: a tenant, a session, or a request number. */
  tag: string;
  turns: ChatRequest[];
}

export interface Workload {
  name: WorkloadName;
  /** One line for the report. */
  about: string;
  conversations: Conversation[];
}

export const WORKLOAD_NAMES = ["shared", "multiturn", "uniform", "hot", "burst"] as const;
export type WorkloadName = (typeof WORKLOAD_NAMES)[number];

export interface WorkloadSize {
  /** Requests (turns) in the workload. */
  requests: number;
  /** Tenants of the shared-prompt workloads. */
  tenants: number;
  /** Characters of a tenant's system prompt; the hot tenant's is twice as long. */
  systemChars: number;
  /** Characters of a user question (±50%). */
  questionChars: number;
  /** Turns per multi-turn session. */
  turnsPerSession: number;
  /** max_tokens of every request. */
  outputTokens: number;
}

/** A small, fast, seedable PRNG (mulberry32): uniform in [0, 1). */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS = (
  "the of and to in is for on that with as by this from at be are it or an was can we will all not which more " +
  "model token cache queue replica route request prompt answer latency stream batch block prefix tenant policy " +
  "server client engine memory decode prefill budget region weight metric sample window history session order"
).split(" ");

/** Words from the vocabulary until the text is at least `chars` long. */
export function words(random: () => number, chars: number): string {
  const out: string[] = [];
  let length = 0;
  while (length < chars) {
    const w = WORDS[Math.floor(random() * WORDS.length)]!;
    out.push(w);
    length += w.length + 1;
  }
  return out.join(" ");
}

function around(random: () => number, chars: number): number {
  return Math.max(1, Math.round(chars * (0.5 + random())));
}

export function makeWorkload(name: WorkloadName, seed: number, size: WorkloadSize): Workload {
  // One stream per workload: the four do not shift each other when one changes.
  const random = prng(seed * 31 + WORKLOAD_NAMES.indexOf(name) + 1);
  switch (name) {
    case "shared":
      return { name, about: `${size.tenants} tenants, each a ${size.systemChars}-char system prompt + a ~${size.questionChars}-char question`, conversations: sharedPrompts(random, size, null) };
    case "hot":
      return {
        name,
        about: `one tenant sends ~50% with a ${2 * size.systemChars}-char system prompt; the rest as "shared" over ${size.tenants - 1} tenants`,
        conversations: sharedPrompts(random, size, 0.5),
      };
    case "multiturn":
      return { name, about: `sessions of ${size.turnsPerSession} turns, each resending the whole history (~${size.questionChars}-char questions)`, conversations: sessions(random, size) };
    case "uniform":
      return { name, about: `every prompt unique (~${size.systemChars}+${size.questionChars} chars), nothing shared`, conversations: uniform(random, size) };
    case "burst":
      return { name, about: `every request one ${size.systemChars}-char system prompt + a ~${size.questionChars}-char question, all clients starting together on empty caches`, conversations: hotPrefixBurst(random, size) };
  }
}

function systemPrompt(random: () => number, tenant: string, chars: number): string {
  return `You are the assistant of ${tenant}. ${words(random, chars)}`;
}

function question(random: () => number, n: number, chars: number): string {
  return `Question ${n}: ${words(random, around(random, chars))}?`;
}

/**
 * One-turn requests from tenants with long system prompts. With `hotShare`, tenant 0
 * has a prompt twice as long and sends that share of the traffic; the others share the
 * rest evenly.
 */
function sharedPrompts(random: () => number, size: WorkloadSize, hotShare: number | null): Conversation[] {
  const prompts = Array.from({ length: size.tenants }, (_, t) => systemPrompt(random, `tenant-${t}`, hotShare !== null && t === 0 ? 2 * size.systemChars : size.systemChars));
  const out: Conversation[] = [];
  for (let i = 0; i < size.requests; i++) {
    const t = hotShare === null ? Math.floor(random() * size.tenants) : random() < hotShare ? 0 : 1 + Math.floor(random() * (size.tenants - 1));
    const messages: ChatMessage[] = [
      { role: "system", content: prompts[t]! },
      { role: "user", content: question(random, i, size.questionChars) },
    ];
    out.push({ tag: `tenant-${t}`, turns: [{ messages, maxTokens: size.outputTokens }] });
  }
  return out;
}

/**
 * One hot prefix from the first request: every request carries the same system prompt
 * (issue 18's burst: 16 clients start on one shared prompt at once). The closed loop's
 * clients all send their first request together, so the first wave reaches the router
 * before any replica holds the prefix, and a policy that follows the first holder herds.
 */
function hotPrefixBurst(random: () => number, size: WorkloadSize): Conversation[] {
  const prompt = systemPrompt(random, "the hot tenant", size.systemChars);
  return Array.from({ length: size.requests }, (_, i) => ({
    tag: "hot",
    turns: [{ messages: [{ role: "system" as const, content: prompt }, { role: "user" as const, content: question(random, i, size.questionChars) }], maxTokens: size.outputTokens }],
  }));
}

/** Sessions under one short shared system prompt; turn k resends turns 1..k-1 and their answers. */
function sessions(random: () => number, size: WorkloadSize): Conversation[] {
  const system: ChatMessage = { role: "system", content: "You are a helpful assistant. Answer briefly." };
  const out: Conversation[] = [];
  for (let left = size.requests, s = 0; left > 0; s++) {
    const turns: ChatRequest[] = [];
    const history: ChatMessage[] = [system];
    for (let k = 0; k < Math.min(size.turnsPerSession, left); k++) {
      history.push({ role: "user", content: `Session ${s}. ${question(random, k, size.questionChars)}` });
      turns.push({ messages: [...history], maxTokens: size.outputTokens });
      history.push({ role: "assistant", content: words(random, size.outputTokens * 4) }); // 4 bytes a token, as the fake counts
    }
    left -= turns.length;
    out.push({ tag: `session-${s}`, turns });
  }
  return out;
}

/** Unique prompts: the request number comes first, so no two share even their first block. */
function uniform(random: () => number, size: WorkloadSize): Conversation[] {
  return Array.from({ length: size.requests }, (_, i) => ({
    tag: `request-${i}`,
    turns: [{ messages: [{ role: "user" as const, content: `Request ${i}. ${words(random, around(random, size.systemChars + size.questionChars))}` }], maxTokens: size.outputTokens }],
  }));
}

/** Every request of a workload in generator order (conversation by conversation). */
export function requestsOf(w: Workload): ChatRequest[] {
  return w.conversations.flatMap((c) => c.turns);
}
