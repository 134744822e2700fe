// gavel controller's configuration: flags over the chart's environment variables, one
// compiled schema, and errors that name the flag, its variable and what it must be.
import { describe, expect, it } from "vitest";
import { controllerConfig } from "./controller-config.js";

describe("controllerConfig", () => {
  it("takes the chart's variables as defaults and the built-in ones where none is set", () => {
    expect(controllerConfig([], {})).toEqual({
      controllerNamespace: "gavel-system",
      logLevel: "info",
      leaderElect: false,
      warmJudges: 4,
      recordedCallsMaxAgeSeconds: 86400,
      webView: false,
    });
    const env = {
      KUBECONFIG: "/k/config",
      GAVEL_NAMESPACE: "ops",
      GAVEL_POD_NAME: "gavel-controller-7d9-x",
      GAVEL_LOG_LEVEL: "debug",
      GAVEL_POD_RETENTION_SECONDS: "600",
      GAVEL_WARM_JUDGES_MAX: "2",
      GAVEL_RECORDED_CALLS_MAX_AGE: "3600",
      GAVEL_APPROVAL_WEBHOOK_URL: "https://hooks.example.com/gavel",
      GAVEL_APPROVAL_WEBHOOK_SECRET_FILE: "/etc/gavel/approval-webhook/secret",
      GAVEL_NATS_URL: "nats://gavel-nats.ops.svc:4222",
      GAVEL_NATS_CREDS: "/etc/gavel/nats/nats.creds",
      GAVEL_NATS_KEYS: "/etc/gavel/nats",
      GAVEL_NATS_STREAM_REPLICAS: "3",
      GAVEL_RUNTIMES: "/etc/gavel/runtimes/runtimes.yaml",
      GAVEL_HEALTH_PROBE_BIND_ADDRESS: ":8081",
      GAVEL_METRICS_BIND_ADDRESS: "127.0.0.1:8080",
      GAVEL_WEB_VIEW: "true",
    };
    expect(controllerConfig([], env)).toEqual({
      kubeconfig: "/k/config",
      controllerNamespace: "ops",
      logLevel: "debug",
      leaderElect: false,
      nats: { url: "nats://gavel-nats.ops.svc:4222", creds: "/etc/gavel/nats/nats.creds", keys: "/etc/gavel/nats", streamReplicas: 3 },
      workerNatsUrl: "nats://gavel-nats.ops.svc:4222",
      runtimes: "/etc/gavel/runtimes/runtimes.yaml",
      podRetentionSeconds: 600,
      warmJudges: 2,
      recordedCallsMaxAgeSeconds: 3600,
      approvalWebhookUrl: "https://hooks.example.com/gavel",
      approvalWebhookSecretFile: "/etc/gavel/approval-webhook/secret",
      healthProbe: { port: 8081 },
      metrics: { host: "127.0.0.1", port: 8080 },
      webView: true,
      podName: "gavel-controller-7d9-x",
    });
  });

  it("lets flags win over the variables; an empty variable counts as unset", () => {
    const c = controllerConfig(
      [
        "-n",
        "team-a",
        "--leader-elect",
        "--log-level=warn",
        "--pod-retention",
        "0",
        "--warm-judges",
        "0",
        "--recorded-calls-max-age",
        "0",
        "--nats-worker-url",
        "nats://10.0.0.8:4222",
      ],
      {
        GAVEL_LOG_LEVEL: "debug",
        GAVEL_NATS_URL: "nats://n:4222",
        GAVEL_POD_RETENTION_SECONDS: "",
        GAVEL_WEB_VIEW: "false",
      },
    );
    expect(c).toMatchObject({
      namespace: "team-a",
      leaderElect: true,
      logLevel: "warn",
      podRetentionSeconds: 0,
      warmJudges: 0,
      recordedCallsMaxAgeSeconds: 0,
      nats: { url: "nats://n:4222" },
      workerNatsUrl: "nats://10.0.0.8:4222",
      webView: false,
    });
  });

  it("--namespace-selector (GAVEL_NAMESPACE_SELECTOR) instead of one namespace, never both", () => {
    expect(controllerConfig([], { GAVEL_NAMESPACE_SELECTOR: "!gavel.dev/lane" })).toMatchObject({ namespaceSelector: "!gavel.dev/lane" });
    expect(controllerConfig(["--namespace-selector", "team in (a,b)"], {}).namespace).toBeUndefined();
    expect(() => controllerConfig(["-n", "team-a", "--namespace-selector", "team=a"], {})).toThrow(
      "--namespace and --namespace-selector (GAVEL_NAMESPACE_SELECTOR) exclude each other",
    );
  });

  it("names every bad flag with its variable and what it must be", () => {
    expect(() => controllerConfig(["--pod-retention", "ten"], {})).toThrow(
      '--pod-retention (GAVEL_POD_RETENTION_SECONDS) must be a whole number of seconds (0 deletes finished pods at once), got "ten"',
    );
    expect(() => controllerConfig([], { GAVEL_LOG_LEVEL: "loud", GAVEL_NAMESPACE: "Ops_1" })).toThrow(
      '--controller-namespace (GAVEL_NAMESPACE) must be a namespace name (RFC 1123 label), got "Ops_1"; --log-level (GAVEL_LOG_LEVEL) must be one of fatal, error, warn, info, debug, trace, silent, got "loud"',
    );
    expect(() => controllerConfig(["--metrics-bind-address", "8080"], {})).toThrow(
      '--metrics-bind-address (GAVEL_METRICS_BIND_ADDRESS) must be HOST:PORT or :PORT (0 turns it off), got "8080"',
    );
    expect(() => controllerConfig(["--nats", "nats://n:4222", "--nats-stream-replicas", "6"], {})).toThrow(
      '--nats-stream-replicas (GAVEL_NATS_STREAM_REPLICAS) must be a whole number of replicas from 1 to 5 (JetStream\'s bound; at most the servers of the NATS cluster), got "6"',
    );
    expect(() => controllerConfig(["--approval-webhook-url", "hooks.example.com"], {})).toThrow(
      '--approval-webhook-url (GAVEL_APPROVAL_WEBHOOK_URL) must be an http:// or https:// URL, got "hooks.example.com"',
    );
    expect(() => controllerConfig(["--approval-webhook-secret-file", "/s"], {})).toThrow(
      "--approval-webhook-secret-file (GAVEL_APPROVAL_WEBHOOK_SECRET_FILE) needs --approval-webhook-url (GAVEL_APPROVAL_WEBHOOK_URL)",
    );
    expect(() => controllerConfig(["--recorded-calls-max-age", "1d"], {})).toThrow(
      '--recorded-calls-max-age (GAVEL_RECORDED_CALLS_MAX_AGE) must be a whole number of seconds (0 records no calls), got "1d"',
    );
    expect(() => controllerConfig(["--health-probe-bind-address", ":99999"], {})).toThrow(
      '--health-probe-bind-address: ":99999" is not HOST:PORT or :PORT (0 turns it off)',
    );
  });

  it("refuses flags that need another one, and stray arguments", () => {
    expect(() => controllerConfig(["--nats-creds", "/c"], {})).toThrow("--nats-creds (GAVEL_NATS_CREDS) needs --nats (GAVEL_NATS_URL)");
    expect(() => controllerConfig([], { GAVEL_NATS_KEYS: "/k" })).toThrow("--nats-keys (GAVEL_NATS_KEYS) needs --nats (GAVEL_NATS_URL)");
    expect(() => controllerConfig([], { GAVEL_NATS_STREAM_REPLICAS: "3" })).toThrow(
      "--nats-stream-replicas (GAVEL_NATS_STREAM_REPLICAS) needs --nats (GAVEL_NATS_URL)",
    );
    expect(() => controllerConfig(["--web-view"], {})).toThrow("--web-view needs --health-probe-bind-address");
    expect(() => controllerConfig(["extra"], {})).toThrow("unexpected argument extra");
    expect(() => controllerConfig(["--nope"], {})).toThrow(/nope/);
  });
});
