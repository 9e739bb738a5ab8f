/**
 * Credential checks (src/lib/crypto.ts). Besides the answers, these tests pin down *how*
 * the answers are reached, because that is the security property: both sides hashed
 * before comparing (no length leak, and no throw on unequal lengths), and every
 * configured digest compared through timingSafeEqual, whatever the position of the match
 * (no early exit). A plain `===`, `.some(...)` or a compare of the raw bytes gives the
 * same true/false on most inputs and fails here.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { clientKeyDigests } from "../../src/core/config/client-keys";
import { bearerToken, digestMatchesAny, fromHex, rememberedDigest, rememberedDigestCount, secretEquals, sha256, toHex } from "../../src/lib/crypto";

afterEach(() => {
  vi.restoreAllMocks();
});

/** Spies on crypto.subtle.timingSafeEqual, still calling the real one. */
const spyTimingSafeEqual = () => vi.spyOn(crypto.subtle, "timingSafeEqual");

const withAuth = (value: string | null) => new Request("https://router.test/", value === null ? {} : { headers: { authorization: value } });

describe("bearerToken", () => {
  it("takes the credential of a Bearer header, scheme case-insensitive, surrounding blanks ignored", () => {
    expect(bearerToken(withAuth("Bearer sk-abc"))).toBe("sk-abc");
    expect(bearerToken(withAuth("bearer sk-abc"))).toBe("sk-abc");
    expect(bearerToken(withAuth("BEARER   sk-abc  "))).toBe("sk-abc");
  });

  it("has none without the header, with another scheme, an empty credential or one with blanks inside", () => {
    expect(bearerToken(withAuth(null))).toBeUndefined();
    expect(bearerToken(withAuth("Basic dXNlcjpwYXNz"))).toBeUndefined();
    expect(bearerToken(withAuth("Bearer"))).toBeUndefined();
    expect(bearerToken(withAuth("Bearer "))).toBeUndefined();
    expect(bearerToken(withAuth("Bearer a b"))).toBeUndefined();
    expect(bearerToken(withAuth("sk-abc"))).toBeUndefined();
    expect(bearerToken(withAuth("XBearer sk-abc"))).toBeUndefined();
  });
});

describe("secretEquals", () => {
  it("is true for the same secret and false for any other", async () => {
    expect(await secretEquals("test-admin-token", "test-admin-token")).toBe(true);
    expect(await secretEquals("test-admin-tokeN", "test-admin-token")).toBe(false);
    expect(await secretEquals("", "test-admin-token")).toBe(false);
    expect(await secretEquals("", "")).toBe(true);
  });

  it("compares secrets of different lengths without throwing (timingSafeEqual throws on raw bytes of unequal length)", async () => {
    // A prefix and an extension: the cases where a length check or a raw compare gives itself away.
    await expect(secretEquals("test-admin", "test-admin-token")).resolves.toBe(false);
    await expect(secretEquals("test-admin-token-and-more", "test-admin-token")).resolves.toBe(false);
    await expect(secretEquals("x".repeat(10_000), "x")).resolves.toBe(false);
  });

  it("hashes both sides and compares the digests once, with timingSafeEqual", async () => {
    const spy = spyTimingSafeEqual();
    expect(await secretEquals("short", "a-much-longer-expected-secret")).toBe(false);
    expect(await secretEquals("same", "same")).toBe(true);
    expect(spy).toHaveBeenCalledTimes(2);
    for (const [a, b] of spy.mock.calls) {
      expect(ArrayBuffer.isView(a) ? a.byteLength : (a as ArrayBuffer).byteLength).toBe(32);
      expect(ArrayBuffer.isView(b) ? b.byteLength : (b as ArrayBuffer).byteLength).toBe(32);
    }
    // The digests compared are SHA-256 of the two inputs, in some order.
    const [a, b] = spy.mock.calls[0]!.map((x) => toHex(new Uint8Array(ArrayBuffer.isView(x) ? x.buffer.slice(x.byteOffset, x.byteOffset + x.byteLength) : x)));
    expect([a, b].sort()).toEqual([toHex(await sha256("short")), toHex(await sha256("a-much-longer-expected-secret"))].sort());
  });
});

describe("digestMatchesAny", () => {
  const keys = ["sk-one", "sk-two", "sk-three", "sk-four"];
  const digestsOf = (list: string[]) => Promise.all(list.map(sha256));

  it("matches a digest equal in content (a fresh array, not the same object) at any position", async () => {
    const allowed = await digestsOf(keys);
    for (const key of keys) expect(digestMatchesAny(await sha256(key), allowed), key).toBe(true);
    expect(digestMatchesAny(await sha256("sk-five"), allowed)).toBe(false);
    expect(digestMatchesAny(await sha256("sk-one"), [])).toBe(false);
  });

  it("compares every configured digest with timingSafeEqual, with no early exit, wherever the match is", async () => {
    const allowed = await digestsOf(keys);
    const spy = spyTimingSafeEqual();
    for (const presented of [...keys, "sk-nobody"]) {
      spy.mockClear();
      const digest = await sha256(presented);
      digestMatchesAny(digest, allowed);
      expect(spy, `presented ${presented}`).toHaveBeenCalledTimes(allowed.length);
      // Each configured digest was compared once, against the presented one.
      const compared = spy.mock.calls.map(([a, b]) => (a === digest ? b : a));
      expect(new Set(compared)).toEqual(new Set(allowed));
    }
  });
});

describe("clientKeyDigests", () => {
  it("takes sha256:<hex> entries as they are and hashes resolved secrets, in order", async () => {
    const stored = toHex(await sha256("sk-stored-as-hash"));
    const digests = await clientKeyDigests([`sha256:${stored}`, "sk-from-secret"]);
    expect(digests.map(toHex)).toEqual([stored, toHex(await sha256("sk-from-secret"))]);
    expect(digests.every((d) => d.byteLength === 32)).toBe(true);
  });

  it("yields digests that digestMatchesAny accepts for the original keys only", async () => {
    const digests = await clientKeyDigests([`sha256:${toHex(await sha256("sk-a"))}`, "sk-b"]);
    expect(digestMatchesAny(await sha256("sk-a"), digests)).toBe(true);
    expect(digestMatchesAny(await sha256("sk-b"), digests)).toBe(true);
    // The hex text itself is not a key: only its preimage is.
    expect(digestMatchesAny(await sha256(toHex(await sha256("sk-a"))), digests)).toBe(false);
  });

  it("round-trips hex", () => {
    const bytes = new Uint8Array([0, 1, 15, 16, 127, 128, 254, 255]);
    expect(toHex(bytes)).toBe("00010f107f80feff");
    expect(fromHex("00010f107f80feff")).toEqual(bytes);
  });
});

describe("rememberedDigest", () => {
  it("is the credential's SHA-256, the same object on the next request, and forgets the oldest past its bound", async () => {
    const first = await rememberedDigest("sk-remembered");
    expect(toHex(first.bytes)).toBe(toHex(await sha256("sk-remembered")));
    expect(first.hex).toBe(toHex(first.bytes));
    expect(rememberedDigest("sk-remembered")).toBe(first); // a hit: no digest, no promise

    for (let i = 0; i < 1_050; i++) await rememberedDigest(`sk-flood-${i}`);
    expect(rememberedDigestCount()).toBe(1_000);
    expect(rememberedDigest("sk-remembered")).toBeInstanceOf(Promise); // pushed out by the flood: hashed again
    expect((await rememberedDigest("sk-flood-1049")).hex).toBe(toHex(await sha256("sk-flood-1049")));
  });
});
