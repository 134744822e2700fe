// The e2e tier's browser (test/harness/chromium.ts, Debian's headless Chromium): Page.goto
// returns once the document has loaded, so a page read right after it is whole even when its
// body arrives in parts, as it may through kubectl port-forward. Read earlier, the web view's
// page of a finished run showed its header (phase Succeeded) and its newest iteration only:
// the e2e web view's controller-served case once failed so.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildExecutionView } from "../../src/views/execution-view.js";
import { renderExecutionFragment, renderPage } from "../../src/webui/html.js";
import { Chromium } from "../harness/chromium.js";
import { eventually, sleep } from "../harness/eventually.js";
import { agent, children, execution, parent } from "../fixtures/execution-tree.js";

/** The fixture's run, finished: iteration 1 refined, iteration 2 passed. */
const finished = execution("run", {
  ...parent.status,
  phase: "Succeeded",
  completionTime: "2026-01-01T00:02:00Z",
  iterations: [
    parent.status?.iterations?.[0] ?? { number: 1, phase: "Refining" },
    { number: 2, phase: "Passed", exitCode: 0, validators: [] },
  ],
});

/** What a reader of the page sees: the run's phase and its iterations, newest first. */
const READ = `(() => {
  const section = document.querySelector("section.execution");
  return section === null ? null : { phase: section.dataset.phase, iterations: [...section.querySelectorAll("li.iteration")].map((li) => Number(li.dataset.iteration)) };
})()`;

describe("the harness's headless Chromium", () => {
  let browser: Chromium;
  let server: Server;
  let release: () => void = () => undefined;

  beforeAll(async () => {
    browser = await Chromium.launch();
  });

  afterAll(async () => {
    release();
    server?.closeAllConnections();
    server?.close();
    await browser?.close();
  });

  it("goto returns once the page has loaded: a finished run's page whose body arrives in two parts is read whole", async () => {
    const html = renderPage("run", "/", renderExecutionFragment(buildExecutionView(finished, children, agent), "/", Date.now()), "");
    const cut = html.indexOf(`<li class="iteration" data-iteration="1"`);
    expect(cut).toBeGreaterThan(html.indexOf(`<li class="iteration" data-iteration="2"`));
    // The body up to iteration 1 at once, the rest when the test has read the page (or after 1.5 s).
    const released = new Promise<void>((resolve) => (release = resolve));
    server = createServer((req, res) => {
      if (req.url !== "/") {
        res.writeHead(404).end();
        return;
      }
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      res.write(html.slice(0, cut));
      void Promise.race([released, sleep(1500)]).then(() => res.end(html.slice(cut)));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const page = await browser.newPage();

    await page.goto(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
    const seen = await eventually(
      () => page.evaluate<{ phase: string; iterations: number[] } | null>(READ).then((t) => (t?.phase === "Succeeded" ? t : undefined)),
      10_000,
      "the page's phase",
    );
    release();

    expect(seen.iterations).toEqual([2, 1]);
  });
});
