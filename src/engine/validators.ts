// What the rest of gavel uses of the validators (src/engine/validators/): the thresholds a
// GradientResult is held to and the content of a file a validator reads. The validators
// themselves run inside the engine's outer loop.
export { applyThresholds, fmt, OUTER_MIN_SCORE, thresholdsOf, TOOL_MIN_SCORE, type FileContent } from "./validators/outcome.js";
