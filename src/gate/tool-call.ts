// What the rest of gavel uses of the tool-call service (src/gate/tool-call/): the service that
// answers each call once across gate replicas, the contract of the decide it is given, and the
// store's records and tallies. The store's mirror and its iteration index stay inside.
export { ToolCallRefusal, type Decide, type DecideContext, type Judged } from "./tool-call/decide.js";
export type { IterationTally } from "./tool-call/iteration-index.js";
export {
  DECISION_STREAM,
  DECISION_SUBJECT_PREFIX,
  decisionSubject,
  LOCAL_RUN,
  parseDecisionSubject,
  type DecisionRecord,
  type RunRef,
  type ToolCallRecord,
} from "./tool-call/records.js";
export { ToolCallService } from "./tool-call/service.js";
export type { ToolCallServiceOptions, ToolCallServiceStats } from "./tool-call/service-options.js";
export type { ToolCallStore, ToolCallStoreOptions } from "./tool-call/store.js";
export { CALL_LOG_STREAM, CallLog, callLogSubject, readLoggedCalls, type CallLogOptions, type LoggedCall } from "./tool-call/call-log.js";
