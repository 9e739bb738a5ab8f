/** gjson's Result.Type, spelled out; "json" is an object or an array. */
export type GjsonType = "null" | "false" | "true" | "number" | "string" | "json";
