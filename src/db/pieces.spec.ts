import { describe, expect, it } from "vitest";
import { BIND_PIECE, inPieces } from "./pieces.js";

describe("inPieces", () => {
  it("cuts a list into pieces of at most the size, in order, and none for an empty list", () => {
    expect(inPieces([1, 2, 3, 4, 5], 2)).toEqual([[1, 2], [3, 4], [5]]);
    expect(inPieces([], 2)).toEqual([]);
    const many = Array.from({ length: 2 * BIND_PIECE + 1 }, (_, i) => i);
    expect(inPieces(many).map((p) => p.length)).toEqual([BIND_PIECE, BIND_PIECE, 1]);
    expect(inPieces(many).flat()).toEqual(many);
  });
});
