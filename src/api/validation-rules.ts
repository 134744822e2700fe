// The CEL rules (and their TypeScript twins) for `spec.execution.validation`, the one field
// that takes two shapes (a validator list or the judge form) and so has no structural type:
// see docs/adr/0003-crd-schemas.md.
import { cel, isInt, isMap, ok, type CelRule, type CheckResult } from "./schema-dsl.js";

/** Validator types of the outer loop, in the order the references list them. */
export const VALIDATOR_TYPES = ["exit_code", "json_schema", "regex", "semantic", "multi_judge"] as const;

/** Consensus strategies of multi_judge. */
export const CONSENSUS_MODES = ["weighted_average", "majority", "unanimous", "best_of_n"] as const;

/** Every field a validator entry may carry. */
export const VALIDATOR_FIELDS = [
  "type",
  "min_score",
  "min_confidence",
  "judge_agent",
  "judges",
  "consensus",
  "min_judges_required",
  "min_agreement_confidence",
  "criteria",
  "expected",
  "schema_path",
  "schema",
  "target_path",
  "pattern",
  "target",
  "weights",
  "confidence_weighting",
  "timeout_seconds",
] as const;

const celList = (xs: readonly string[]) => `[${xs.map((x) => `'${x}'`).join(", ")}]`;
const has = (v: Record<string, unknown>, k: string) => Object.prototype.hasOwnProperty.call(v, k);

/** Runs `pred` over each entry when self is a list; the first failure points at its index (and field). */
function eachEntry(self: unknown, pred: (v: unknown) => true | string): CheckResult {
  if (!Array.isArray(self)) return true;
  for (const [i, v] of self.entries()) {
    const r = pred(v);
    if (r !== true) return { at: `[${i}]${r}` };
  }
  return true;
}

/** Like eachEntry, for entries that are maps (other entries are another rule's business). */
function eachMap(self: unknown, pred: (v: Record<string, unknown>) => true | string): CheckResult {
  return eachEntry(self, (v) => (isMap(v) ? pred(v) : true));
}

const forList = (body: string) => `type(self) != list || self.all(v, ${body})`;
const forMaps = (body: string) => forList(`type(v) != map || ${body}`);
const isNumber = (x: unknown) => typeof x === "number";

/** The rules on `spec.execution.validation`. */
export const validationRules: CelRule[] = [
  cel(
    "type(self) == list || type(self) == map",
    "must be a list of validators (- type: exit_code|json_schema|regex|semantic|multi_judge ...) or, for a judge, the form {system: {must_succeed: true}, output: {format: json, schema: {...}}}",
    (self) => ok(Array.isArray(self) || isMap(self)),
  ),
  // ---- the validator list
  cel(
    forList(`type(v) == map && 'type' in v && v['type'] in ${celList(VALIDATOR_TYPES)}`),
    "each validator needs type: one of exit_code, json_schema, regex, semantic, multi_judge (semantic judges of tool calls go under execution.tool_validation)",
    (self) => eachEntry(self, (v) => (isMap(v) && VALIDATOR_TYPES.includes(v.type as never) ? true : isMap(v) ? ".type" : "")),
  ),
  cel(
    forMaps(`v.all(k, k in ${celList(VALIDATOR_FIELDS)})`),
    `a validator has an unknown field; the fields are: ${VALIDATOR_FIELDS.join(", ")}`,
    (self) =>
      eachMap(self, (v) => {
        const bad = Object.keys(v).find((k) => !VALIDATOR_FIELDS.includes(k as never));
        return bad === undefined ? true : `.${bad}`;
      }),
  ),
  cel(
    forMaps(
      `${celList(["min_score", "min_confidence", "min_agreement_confidence"])}.all(k, !(k in v) || ((type(v[k]) == int || type(v[k]) == double) && double(v[k]) >= 0.0 && double(v[k]) <= 1.0))`,
    ),
    "min_score, min_confidence and min_agreement_confidence are numbers from 0.0 to 1.0 (e.g. min_score: 0.8)",
    (self) =>
      eachMap(self, (v) => {
        const bad = ["min_score", "min_confidence", "min_agreement_confidence"].find(
          (k) => has(v, k) && !(isNumber(v[k]) && v[k] >= 0 && v[k] <= 1),
        );
        return bad === undefined ? true : `.${bad}`;
      }),
  ),
  cel(
    forMaps(
      `${celList(["criteria", "judge_agent", "schema_path", "target_path", "pattern", "target", "consensus"])}.all(k, !(k in v) || type(v[k]) == string)`,
    ),
    "criteria, judge_agent, schema_path, target_path, pattern, target and consensus are strings",
    (self) =>
      eachMap(self, (v) => {
        const bad = ["criteria", "judge_agent", "schema_path", "target_path", "pattern", "target", "consensus"].find(
          (k) => has(v, k) && typeof v[k] !== "string",
        );
        return bad === undefined ? true : `.${bad}`;
      }),
  ),
  cel(
    forMaps(
      `!('type' in v) || v['type'] != 'semantic' || ('judge_agent' in v && type(v['judge_agent']) == string && size(v['judge_agent']) > 0)`,
    ),
    "a semantic validator needs judge_agent: the name of a judge Agent (labels: {role: judge}, execution.mode: one-shot)",
    (self) =>
      eachMap(self, (v) =>
        v.type !== "semantic" || (typeof v.judge_agent === "string" && v.judge_agent.length > 0) ? true : ".judge_agent",
      ),
  ),
  cel(
    forMaps(
      `!('type' in v) || v['type'] != 'multi_judge' || ('judges' in v && type(v['judges']) == list && size(v['judges']) > 0 && v['judges'].all(j, type(j) == string && size(j) > 0))`,
    ),
    "a multi_judge validator needs judges: a non-empty list of judge Agent names (e.g. judges: [code-quality-judge, security-reviewer-judge])",
    (self) =>
      eachMap(self, (v) =>
        v.type !== "multi_judge" ||
        (Array.isArray(v.judges) && v.judges.length > 0 && v.judges.every((j) => typeof j === "string" && j.length > 0))
          ? true
          : ".judges",
      ),
  ),
  cel(
    forMaps(
      `!('min_judges_required' in v) || (type(v['min_judges_required']) == int && v['min_judges_required'] >= 1 && (!('judges' in v) || type(v['judges']) != list || v['judges'].size() >= v['min_judges_required']))`,
    ),
    "min_judges_required is an integer from 1 to the number of judges (size(judges))",
    (self) =>
      eachMap(self, (v) => {
        if (!has(v, "min_judges_required")) return true;
        const m = v.min_judges_required;
        const fits = isInt(m) && m >= 1 && (!Array.isArray(v.judges) || v.judges.length >= m);
        return fits ? true : ".min_judges_required";
      }),
  ),
  cel(
    forMaps(`!('consensus' in v) || v['consensus'] in ${celList(CONSENSUS_MODES)}`),
    "consensus must be one of weighted_average (default), majority, unanimous, best_of_n",
    (self) => eachMap(self, (v) => (!has(v, "consensus") || CONSENSUS_MODES.includes(v.consensus as never) ? true : ".consensus")),
  ),
  cel(
    forMaps(
      `(!('timeout_seconds' in v) || (type(v['timeout_seconds']) == int && v['timeout_seconds'] >= 1)) && (!('expected' in v) || type(v['expected']) == int)`,
    ),
    "timeout_seconds is a whole number of seconds >= 1 (default 300); expected is an integer exit code (default 0)",
    (self) =>
      eachMap(self, (v) => {
        if (has(v, "timeout_seconds") && !(isInt(v.timeout_seconds) && v.timeout_seconds >= 1)) return ".timeout_seconds";
        if (has(v, "expected") && !isInt(v.expected)) return ".expected";
        return true;
      }),
  ),
  cel(
    forMaps(
      `!('type' in v) || v['type'] != 'json_schema' || ('target_path' in v && type(v['target_path']) == string && v['target_path'].startsWith('/') && ('schema_path' in v || 'schema' in v))`,
    ),
    "a json_schema validator needs target_path (absolute path of the file to check) and schema_path (absolute path of the schema file) or an inline schema",
    (self) =>
      eachMap(self, (v) => {
        if (v.type !== "json_schema") return true;
        if (!(typeof v.target_path === "string" && v.target_path.startsWith("/"))) return ".target_path";
        return has(v, "schema_path") || has(v, "schema") ? true : ".schema_path";
      }),
  ),
  cel(
    forMaps(
      `(!('schema_path' in v) || (type(v['schema_path']) == string && v['schema_path'].startsWith('/'))) && (!('schema' in v) || type(v['schema']) == map)`,
    ),
    "schema_path is an absolute path inside the container (e.g. /agent/schema.json); schema is an inline JSON Schema object",
    (self) =>
      eachMap(self, (v) => {
        if (has(v, "schema_path") && !(typeof v.schema_path === "string" && v.schema_path.startsWith("/"))) return ".schema_path";
        if (has(v, "schema") && !isMap(v.schema)) return ".schema";
        return true;
      }),
  ),
  cel(
    forMaps(`!('type' in v) || v['type'] != 'regex' || ('pattern' in v && type(v['pattern']) == string && size(v['pattern']) > 0)`),
    "a regex validator needs pattern: a regular expression (RE2 syntax) searched in the target",
    (self) => eachMap(self, (v) => (v.type !== "regex" || (typeof v.pattern === "string" && v.pattern.length > 0) ? true : ".pattern")),
  ),
  cel(
    forMaps(`!('target' in v) || (type(v['target']) == string && (v['target'] == 'stdout' || v['target'].startsWith('/')))`),
    'target is "stdout" (default) or an absolute file path such as /workspace/out.txt',
    (self) =>
      eachMap(self, (v) =>
        !has(v, "target") || (typeof v.target === "string" && (v.target === "stdout" || v.target.startsWith("/"))) ? true : ".target",
      ),
  ),
  cel(
    forMaps(
      `(!('confidence_weighting' in v) || type(v['confidence_weighting']) == bool) && (!('weights' in v) || (type(v['weights']) == map && v['weights'].all(j, type(v['weights'][j]) == int || type(v['weights'][j]) == double)))`,
    ),
    "confidence_weighting is true or false; weights maps judge names to numbers (e.g. weights: {security-judge: 2})",
    (self) =>
      eachMap(self, (v) => {
        if (has(v, "confidence_weighting") && typeof v.confidence_weighting !== "boolean") return ".confidence_weighting";
        if (has(v, "weights") && !(isMap(v.weights) && Object.values(v.weights).every(isNumber))) return ".weights";
        return true;
      }),
  ),
  // ---- the judge form
  cel(
    "type(self) != map || self.all(k, k in ['system', 'output'])",
    "the judge form of validation has only system: {must_succeed} and output: {format, schema}",
    (self) => {
      if (!isMap(self)) return true;
      const bad = Object.keys(self).find((k) => k !== "system" && k !== "output");
      return bad === undefined ? true : { at: `.${bad}` };
    },
  ),
  cel(
    "type(self) != map || !('system' in self) || (type(self.system) == map && self.system.all(k, k == 'must_succeed') && (!('must_succeed' in self.system) || type(self.system.must_succeed) == bool))",
    "system is {must_succeed: true|false}",
    (self) => {
      if (!isMap(self) || !has(self, "system")) return true;
      const s = self.system;
      if (!isMap(s)) return { at: ".system" };
      const bad = Object.keys(s).find((k) => k !== "must_succeed");
      if (bad !== undefined) return { at: `.system.${bad}` };
      return ok(!has(s, "must_succeed") || typeof s.must_succeed === "boolean", ".system.must_succeed");
    },
  ),
  cel(
    "type(self) != map || !('output' in self) || (type(self.output) == map && self.output.all(k, k in ['format', 'schema']) && (!('format' in self.output) || self.output.format in ['json', 'text']) && (!('schema' in self.output) || type(self.output.schema) == map))",
    "output is {format: json|text, schema: {JSON Schema of the verdict}}",
    (self) => {
      if (!isMap(self) || !has(self, "output")) return true;
      const o = self.output;
      if (!isMap(o)) return { at: ".output" };
      const bad = Object.keys(o).find((k) => k !== "format" && k !== "schema");
      if (bad !== undefined) return { at: `.output.${bad}` };
      if (has(o, "format") && o.format !== "json" && o.format !== "text") return { at: ".output.format" };
      return ok(!has(o, "schema") || isMap(o.schema), ".output.schema");
    },
  ),
];
