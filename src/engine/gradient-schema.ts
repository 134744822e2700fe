// The one compiled validator of a verdict's fixed shape (GradientResult; the schema is in src/api/).
import { Ajv, type ValidateFunction } from "ajv";
import { GRADIENT_RESULT_SCHEMA } from "../api/gradient-result-schema.js";

// One compiled validator for the fixed verdict schema; judge-declared schemas are compiled
// per call in their own Ajv of the draft they name, so that their $ids can never collide.
export const validateGradientShape: ValidateFunction = new Ajv({ allErrors: true, strict: false }).compile(GRADIENT_RESULT_SCHEMA);
