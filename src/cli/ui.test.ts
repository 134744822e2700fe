// `gavel ui --addr`: HOST:PORT as the user types it, and a clear error naming the flag otherwise.
import { describe, expect, it } from "vitest";
import { UsageError } from "./command.js";
import { parseAddr } from "./ui.js";

describe("parseAddr", () => {
  it("takes HOST:PORT, an IPv6 host in brackets, port 0 for any free one", () => {
    expect(parseAddr("127.0.0.1:8090")).toEqual({ host: "127.0.0.1", port: 8090 });
    expect(parseAddr("[::1]:0")).toEqual({ host: "::1", port: 0 });
    expect(parseAddr("localhost:80")).toEqual({ host: "localhost", port: 80 });
  });
  it("refuses anything else, naming --addr", () => {
    for (const bad of ["8090", ":8090", "host:99999", "host:", "::1:80"]) {
      expect(() => parseAddr(bad), bad).toThrow(UsageError);
      expect(() => parseAddr(bad), bad).toThrow(/--addr/);
    }
  });
});
