import { describe, expect, it } from "vitest";
import demo from "../../examples/demo.yaml?raw";
import seed from "../../examples/seed004-routing.yaml?raw";
import kserve from "../../examples/graphs/kserve-samples.yaml?raw";
import bandit from "../../examples/graphs/router-bandit.yaml?raw";
import { decodeBlob, encodeBlob, loadBlob, parseYaml, toBlob } from "../../src/core/config/blob";
import { loadConfig } from "../../src/core/config/load";
import type { LoadResult } from "../../src/core/config/load";
import { parseYamlDocuments } from "../../src/core/config/yaml";

const EXAMPLES = { demo, seed, kserve, bandit };
const VARS = { REMOTE_API_KEY: "sk-1" };

function documentsOf(text: string): unknown[] {
  const parsed = parseYamlDocuments(text);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return parsed.documents;
}

function blobOf(text: string): string {
  const result = toBlob(documentsOf(text), VARS);
  if (!result.ok) throw new Error(JSON.stringify(result.errors));
  return result.blob;
}

const errorsOf = (result: LoadResult) => (result.ok ? [] : result.errors.map((e) => `${e.path}: ${e.message}`));

describe("the KV blob format", () => {
  it.each(Object.entries(EXAMPLES))("loads %s exactly as its YAML text does", async (_name, text) => {
    expect(await loadBlob(blobOf(text), VARS)).toEqual(loadConfig(text, VARS));
  });

  it("is one line of JSON per document, so a one-document config is plain JSON", () => {
    expect(JSON.parse(blobOf(demo))).toEqual(documentsOf(demo)[0]);
    const lines = blobOf(kserve).split("\n");
    expect(lines.filter((line) => line === "---")).toHaveLength(documentsOf(kserve).length - 1);
  });

  it("is also a YAML stream of the same documents, so Workers from before the format read it", () => {
    for (const text of Object.values(EXAMPLES)) expect(documentsOf(blobOf(text))).toEqual(documentsOf(text));
  });

  it("keeps ${VAR} references as written: they resolve from the env of the Worker that loads it", async () => {
    const blob = blobOf(seed);
    expect(blob).toContain("${REMOTE_API_KEY:-}");
    const result = await loadBlob(blob, {});
    if (!result.ok) throw new Error(JSON.stringify(result.errors));
    expect(result.config.pools["llama-3-8b"]!.replicas[1]!.api_key).toBeUndefined();
  });

  it("decodes only what encodeBlob writes; other text takes the YAML path", () => {
    const documents = documentsOf(kserve);
    expect(decodeBlob(encodeBlob(documents))).toEqual(documents);
    expect(decodeBlob(demo)).toBeNull(); // YAML as written
    expect(decodeBlob(JSON.stringify(documents[0], null, 2))).toBeNull(); // JSON, but not compact
    expect(decodeBlob('{"models":{},"models":{}}')).toBeNull(); // JSON.parse would keep one; YAML refuses both
    expect(decodeBlob("[]")).toBeNull();
    expect(decodeBlob('"text"')).toBeNull();
  });
});

describe("versions stored before the blob format", () => {
  it("load as YAML, with the same result and errors as ever", async () => {
    for (const text of Object.values(EXAMPLES)) expect(await loadBlob(text, VARS)).toEqual(loadConfig(text, VARS));
    const bad = "models: { m: { pool: missing } }\npools: {}\n";
    expect(errorsOf(await loadBlob(bad, {}))).toEqual(['models.m.pool: unknown pool "missing"']);
    const duplicate = '{"models":{},"models":{}}';
    expect(errorsOf(await loadBlob(duplicate, {}))).toEqual(errorsOf(loadConfig(duplicate, {})));
    expect(errorsOf(await loadBlob(duplicate, {}))).toEqual(["(document): duplicated mapping key at line 1, column 14"]);
  });
});

describe("publishing", () => {
  it("names errors as the operator wrote them and stores nothing", () => {
    const text = "models: { m: { pool: p } }\npools: { p: { replicas: [ { id: r, url: 'http://h:1', weight: .inf } ] } }\n";
    const result = toBlob(documentsOf(text), {});
    expect(result.ok).toBe(false);
    expect(errorsOf(result)).toEqual(errorsOf(loadConfig(text, {})));
    expect("blob" in result).toBe(false);
  });

  it("parses YAML text on demand, with the loader's own errors", async () => {
    expect(await parseYaml("models: [unclosed")).toEqual(parseYamlDocuments("models: [unclosed"));
    expect(await parseYaml("   \n")).toEqual({ ok: false, errors: [{ path: "(document)", message: "is empty" }] });
  });
});
