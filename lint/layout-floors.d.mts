// Types of layout-floors.mjs for the tests that load it.

/** The page the floors are read from, relative to the repository root. */
export declare const LAYOUT_PAGE: string;

/** The floors listed in a layout page's first fenced block, top first. */
export declare function parseFloors(text: string, page?: string): string[];

/** The floors of the repository at root, read from its docs/layout.md. */
export declare function readFloors(root: string): string[];
