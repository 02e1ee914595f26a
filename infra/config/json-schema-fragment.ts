/** A JSON Schema (draft-07) fragment: what each stack key declares its values with. A leaf. */
export type JsonSchema = { readonly [keyword: string]: unknown };
