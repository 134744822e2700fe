// gavel's own lint rules (ADR 0050, 0055): the floors of docs/layout.md (imports only run down
// its list, and never into another folder's sub-folders: a sub-folder is used through the file
// of its name beside it), and a file-length limit. The length limit's exceptions are an explicit
// allowlist in this folder that only shrinks: an entry that is no longer needed is itself an
// error, so it is removed when its file is split.
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { LAYOUT_PAGE, readFloors } from "./layout-floors.mjs";

/** Lines a hand-written source file may have (wc -l); past it the file holds more than one idea. */
export const MAX_LINES = 500;
export const MAX_LINES_ALLOWLIST = "lint/max-lines-allowlist.json";

/** Repository-relative path with forward slashes, `.js` written as the `.ts` it is compiled from. */
function repoPath(root, file) {
  return relative(root, file).split(sep).join("/").replace(/\.js$/, ".ts");
}

/** The floor a repository path sits on: `src/gate/` for src/gate/guard/x.ts, `src/errors.ts` for itself. */
function floorOf(path) {
  const parts = path.split("/");
  if (parts[0] !== "src" || parts.length < 2) return undefined;
  return parts.length === 2 ? path : `src/${parts[1]}/`;
}

/** The sub-folder of its floor that path is inside (src/gate/guard/ for src/gate/guard/x.ts), or undefined at its top. */
function subFolderOf(path, floor) {
  if (!floor.endsWith("/")) return undefined;
  const rest = path.slice(floor.length);
  const slash = rest.indexOf("/");
  return slash < 0 ? undefined : floor + rest.slice(0, slash + 1);
}

function readJson(root, file) {
  const text = readFileSync(join(root, file), "utf8");
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new Error(`${file}: not valid JSON (${err.message})`, { cause: err });
  }
}

/** Throws, naming the allowlist and the entry, when an entry names a file that no longer exists. */
function checkEntriesExist(root, file, paths) {
  for (const path of paths) {
    if (!existsSync(join(root, path))) {
      throw new Error(`${file} names ${path}, which does not exist: remove the entry (or rename it with its file)`);
    }
  }
}

/** Every module specifier of a file's imports and re-exports, with the node to report on. */
function importVisitors(onSource) {
  const visit = (node) => {
    if (node.source && node.source.type === "Literal" && typeof node.source.value === "string") onSource(node.source.value, node);
  };
  return {
    ImportDeclaration: visit,
    ExportNamedDeclaration: visit,
    ExportAllDeclaration: visit,
    ImportExpression: visit,
    TSImportType(node) {
      const arg = node.argument;
      const lit = arg && arg.type === "TSLiteralType" ? arg.literal : arg;
      if (lit && lit.type === "Literal" && typeof lit.value === "string") onSource(lit.value, node);
    },
  };
}

function floorsRule(root, floors) {
  const rank = new Map(floors.map((f, i) => [f, i]));
  return {
    meta: {
      type: "problem",
      docs: { description: `imports only run down ${LAYOUT_PAGE}'s list and never into another folder's sub-folders` },
      schema: [],
    },
    create(context) {
      const importer = repoPath(root, context.filename);
      const from = floorOf(importer);
      // A test beside the code may assemble parts of several floors to exercise them together;
      // nothing imports a test, so it adds no arrow to the house.
      if (from === undefined || importer.endsWith(".test.ts")) return {};
      if (!rank.has(from)) {
        return {
          Program(node) {
            context.report({ node, message: `${from} is on no floor of ${LAYOUT_PAGE}: add it to the list where its imports put it` });
          },
        };
      }
      return {
        ...importVisitors((spec, node) => {
          if (!spec.startsWith(".")) return;
          const target = repoPath(root, resolve(dirname(context.filename), spec));
          const to = floorOf(target);
          if (to === undefined) {
            if (target.startsWith("../") || target.startsWith("node_modules/")) return;
            context.report({
              node,
              message: `${importer} imports ${target}, outside src/: src/ is the bottom of the house, nothing in it imports judges/, bench/ or test/`,
            });
            return;
          }
          if (to === from) return;
          if (!rank.has(to)) {
            context.report({ node, message: `${importer} imports ${target}, whose floor ${to} is not on ${LAYOUT_PAGE}'s list` });
            return;
          }
          if (rank.get(to) < rank.get(from)) {
            context.report({
              node,
              message: `${importer} (floor ${from}) imports ${target} (floor ${to}, above it in ${LAYOUT_PAGE}): imports only run down the list; move the shared part down, or pass it in`,
            });
            return;
          }
          const inside = subFolderOf(target, to);
          if (inside !== undefined) {
            context.report({
              node,
              message: `${importer} reaches into ${target}, inside ${to}: import what ${inside.slice(0, -1)}.ts, the entry file beside ${inside}, exposes (export it there if it is missing)`,
            });
          }
        }),
      };
    },
  };
}

function maxLinesRule(root, caps) {
  return {
    meta: { type: "suggestion", docs: { description: `a source file has at most ${MAX_LINES} lines` }, schema: [] },
    create(context) {
      const file = repoPath(root, context.filename);
      return {
        Program(node) {
          const lines = context.sourceCode.lines;
          const count = lines.length - (lines[lines.length - 1] === "" ? 1 : 0);
          const cap = caps[file];
          if (cap === undefined) {
            if (count > MAX_LINES) {
              context.report({
                node,
                loc: { line: 1, column: 0 },
                message: `${file} has ${count} lines, past ${MAX_LINES}: split it by concern (one idea per file)`,
              });
            }
          } else if (count <= MAX_LINES) {
            context.report({
              node,
              loc: { line: 1, column: 0 },
              message: `${file} has ${count} lines, within ${MAX_LINES}: remove its entry from ${MAX_LINES_ALLOWLIST}`,
            });
          } else if (count > cap) {
            context.report({
              node,
              loc: { line: 1, column: 0 },
              message: `${file} has ${count} lines, past the ${cap} ${MAX_LINES_ALLOWLIST} lets it keep while it waits to be split: take lines out, not in (lower the entry as it shrinks)`,
            });
          }
        },
      };
    },
  };
}

/**
 * The eslint config blocks of gavel's own rules for the repository at root: the floors read from
 * docs/layout.md, the length allowlist from this folder (an entry naming a missing file throws).
 */
export function gavelRules(root) {
  const floors = readFloors(root);
  const caps = readJson(root, MAX_LINES_ALLOWLIST);
  checkEntriesExist(root, MAX_LINES_ALLOWLIST, Object.keys(caps));
  const plugin = { rules: { floors: floorsRule(root, floors), "max-lines": maxLinesRule(root, caps) } };
  return [
    { plugins: { gavel: plugin } },
    { files: ["src/**/*.ts"], rules: { "gavel/floors": "error" } },
    { files: ["**/*.ts"], rules: { "gavel/max-lines": "error" } },
  ];
}
