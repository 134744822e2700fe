// Debian's chromium, headless, driven over the DevTools protocol on a pipe
// (--remote-debugging-pipe: NUL-terminated JSON on fds 3 and 4), so tests need no browser
// download, no WebSocket client and no npm driver. Enough for the e2e tier: open a page,
// evaluate expressions in it, take a screenshot.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Readable, Writable } from "node:stream";

/** Where install-deps.sh's `chromium` package puts the browser. */
export const CHROMIUM = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].find((p) => existsSync(p)) ?? "chromium";

interface Pending {
  resolve(value: Record<string, unknown>): void;
  reject(err: Error): void;
  method: string;
}

/** A DevTools event (a message without an id), with the session of the page it comes from. */
interface DevToolsEvent {
  method: string;
  params: Record<string, unknown>;
  sessionId?: string;
}

/** A headless browser; close() ends it and removes its profile. */
export class Chromium {
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly listeners = new Set<(e: DevToolsEvent) => void>();
  private buffer = "";
  private exited: string | undefined;

  private constructor(
    private readonly proc: ChildProcess,
    private readonly toBrowser: Writable,
    private readonly profile: string,
    private readonly stderr: () => string,
  ) {
    const fromBrowser = proc.stdio[4] as Readable;
    fromBrowser.setEncoding("utf8");
    fromBrowser.on("data", (chunk: string) => this.receive(chunk));
    proc.on("exit", (code, signal) => {
      this.exited = `chromium exited (${code ?? signal ?? "?"}): ${this.stderr().slice(-2000)}`;
      for (const p of this.pending.values()) p.reject(new Error(`${p.method}: ${this.exited}`));
      this.pending.clear();
    });
  }

  /** Starts the browser (headless, no sandbox: the tests run as root). */
  static async launch(): Promise<Chromium> {
    const profile = await mkdtemp(join(tmpdir(), "gavel-chromium-"));
    const proc = spawn(
      CHROMIUM,
      [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-extensions",
        "--hide-scrollbars",
        "--mute-audio",
        "--remote-debugging-pipe",
        `--user-data-dir=${profile}`,
        "about:blank",
      ],
      { stdio: ["ignore", "ignore", "pipe", "pipe", "pipe"] },
    );
    let err = "";
    proc.stderr?.setEncoding("utf8");
    proc.stderr?.on("data", (d: string) => (err = (err + d).slice(-8000)));
    await new Promise<void>((resolve, reject) => {
      proc.once("spawn", resolve);
      proc.once("error", (e) =>
        reject(new Error(`starting ${CHROMIUM}: ${e.message} (test/harness/install-deps.sh installs Debian's chromium)`)),
      );
    });
    const browser = new Chromium(proc, proc.stdio[3] as Writable, profile, () => err);
    await browser.send("Browser.getVersion");
    return browser;
  }

  private receive(chunk: string): void {
    this.buffer += chunk;
    let end: number;
    while ((end = this.buffer.indexOf("\0")) >= 0) {
      const msg = JSON.parse(this.buffer.slice(0, end)) as {
        id?: number;
        result?: Record<string, unknown>;
        error?: { message: string };
      } & Partial<DevToolsEvent>;
      this.buffer = this.buffer.slice(end + 1);
      if (msg.id === undefined) {
        if (msg.method !== undefined)
          for (const l of this.listeners)
            l({ method: msg.method, params: msg.params ?? {}, ...(msg.sessionId !== undefined ? { sessionId: msg.sessionId } : {}) });
        continue;
      }
      const p = this.pending.get(msg.id);
      this.pending.delete(msg.id);
      if (msg.error !== undefined) p?.reject(new Error(`${p.method}: ${msg.error.message}`));
      else p?.resolve(msg.result ?? {});
    }
  }

  /** One DevTools command (to the browser, or to a page's session). */
  send(method: string, params: Record<string, unknown> = {}, sessionId?: string): Promise<Record<string, unknown>> {
    if (this.exited !== undefined) return Promise.reject(new Error(`${method}: ${this.exited}`));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, method });
      this.toBrowser.write(`${JSON.stringify({ id, method, params, ...(sessionId !== undefined ? { sessionId } : {}) })}\0`);
    });
  }

  /** Calls `listener` with every DevTools event until the returned function is called. */
  listen(listener: (e: DevToolsEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** A new tab of the given viewport size. */
  async newPage(width = 1280, height = 900): Promise<Page> {
    const { targetId } = (await this.send("Target.createTarget", { url: "about:blank" })) as { targetId: string };
    const { sessionId } = (await this.send("Target.attachToTarget", { targetId, flatten: true })) as { sessionId: string };
    const page = new Page(this, sessionId);
    await page.send("Page.enable");
    await page.send("Page.setLifecycleEventsEnabled", { enabled: true });
    await page.send("Emulation.setDeviceMetricsOverride", { width, height, deviceScaleFactor: 1, mobile: false });
    return page;
  }

  async close(): Promise<void> {
    if (this.exited === undefined) {
      const gone = new Promise((resolve) => this.proc.once("exit", resolve));
      await this.send("Browser.close").catch(() => this.proc.kill("SIGKILL"));
      await Promise.race([gone, new Promise((resolve) => setTimeout(resolve, 5000))]);
      if (this.exited === undefined) this.proc.kill("SIGKILL");
    }
    await rm(this.profile, { recursive: true, force: true });
  }
}

/** One tab. */
export class Page {
  constructor(
    private readonly browser: Chromium,
    private readonly sessionId: string,
  ) {}

  send(method: string, params: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
    return this.browser.send(method, params, this.sessionId);
  }

  /**
   * Loads a URL; resolves once the document has loaded (its load event), so what is read of
   * it next is the whole document. A navigation only committed has parsed what has arrived so
   * far: a page whose body comes in parts (through kubectl port-forward) would be read half.
   */
  async goto(url: string, timeoutMs = 30_000): Promise<void> {
    // The load of this navigation (its loaderId, known once Page.navigate answers) may be told before that answer.
    const loads = new Set<string>();
    let loaded: (() => void) | undefined;
    const stop = this.browser.listen((e) => {
      if (e.sessionId !== this.sessionId || e.method !== "Page.lifecycleEvent" || e.params.name !== "load") return;
      loads.add(String(e.params.loaderId));
      loaded?.();
    });
    try {
      const r = (await this.send("Page.navigate", { url })) as { errorText?: string; loaderId?: string };
      if (r.errorText !== undefined) throw new Error(`navigating to ${url}: ${r.errorText}`);
      const loaderId = r.loaderId;
      // No loaderId: a navigation within the document, which loads nothing.
      if (loaderId === undefined || loads.has(loaderId)) return;
      let timer: NodeJS.Timeout | undefined;
      await new Promise<void>((resolve, reject) => {
        loaded = () => {
          if (loads.has(loaderId)) resolve();
        };
        timer = setTimeout(() => reject(new Error(`navigating to ${url}: the page did not load within ${timeoutMs} ms`)), timeoutMs);
      }).finally(() => clearTimeout(timer));
    } finally {
      stop();
    }
  }

  /** The value of a JavaScript expression in the page (JSON-serialisable; promises awaited). */
  async evaluate<T>(expression: string): Promise<T> {
    const r = (await this.send("Runtime.evaluate", { expression, returnByValue: true, awaitPromise: true })) as {
      result: { value?: T };
      exceptionDetails?: { text: string; exception?: { description?: string } };
    };
    if (r.exceptionDetails !== undefined)
      throw new Error(`in the page: ${r.exceptionDetails.exception?.description ?? r.exceptionDetails.text}`);
    return r.result.value as T;
  }

  /** A PNG of the whole page (or the viewport), written to `file`; returns its size in bytes. */
  async screenshot(file: string, fullPage = true): Promise<number> {
    const params: Record<string, unknown> = { format: "png", captureBeyondViewport: fullPage };
    if (fullPage) {
      const { cssContentSize } = (await this.send("Page.getLayoutMetrics")) as { cssContentSize: { width: number; height: number } };
      params.clip = { x: 0, y: 0, width: Math.ceil(cssContentSize.width), height: Math.ceil(cssContentSize.height), scale: 1 };
    }
    const { data } = (await this.send("Page.captureScreenshot", params)) as { data: string };
    const png = Buffer.from(data, "base64");
    await writeFile(file, png);
    return png.length;
  }
}
