// Bundles a page or a probe that imports @intentd/react, with esbuild: the React demo
// shop (example/shop.tsx, for `make modal-demo` and the browser tests), the tests'
// probes, and the size figures of the package.
//
//   node clients/react/scripts/bundle.mjs --entry FILE --outfile FILE
//        [--react DIR] [--from DIR] [--platform browser|node] [--react-external]
//
// --react DIR: where `react` and `react-dom` are resolved from (a folder whose
//   node_modules, or its parents', hold the React to build against; default: this
//   package's). tests/react/react18 and tests/react/react19 hold React 18 and 19.
// --from DIR: resolve `@intentd/react` as a published package installed under
//   DIR/node_modules (the tests unpack `npm pack`'s tarball there); default: this
//   package's TypeScript sources.
// --react-external: leave react and react-dom out (to measure the package alone).
// Prints {"outfile", "react", "bytes", "gzip"} as JSON: the React version bundled,
// the bundle's size and its size gzipped (level 9).
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { gzipSync } from "node:zlib";
import { build } from "esbuild";

const here = dirname(fileURLToPath(import.meta.url));
const { values } = parseArgs({
  options: {
    entry: { type: "string" },
    outfile: { type: "string" },
    react: { type: "string" },
    from: { type: "string" },
    platform: { type: "string", default: "browser" },
    "react-external": { type: "boolean", default: false },
  },
});
if (!values.entry || !values.outfile) throw new Error("--entry FILE and --outfile FILE are required");
const reactDir = resolve(values.react ?? join(here, ".."));
const fromDir = values.from ? resolve(values.from) : null;
const external = values["react-external"];
const REACT = /^react(-dom)?(\/.*)?$/;

// Every import of react or react-dom (the page's, the package's, react-dom's own) is
// resolved from reactDir, so one React is bundled: the one asked for.
const pick = {
  name: "pick-react-and-package",
  setup(builder) {
    builder.onResolve({ filter: REACT }, (args) => {
      if (external) return { path: args.path, external: true };
      if (args.pluginData === "picked") return undefined;
      return builder.resolve(args.path, { kind: args.kind, resolveDir: reactDir, pluginData: "picked" });
    });
    builder.onResolve({ filter: /^@intentd\/react$/ }, (args) => {
      if (fromDir === null) return { path: join(here, "..", "src", "index.ts") };
      if (args.pluginData === "picked") return undefined;
      return builder.resolve(args.path, { kind: args.kind, resolveDir: fromDir, pluginData: "picked" });
    });
  },
};

const outfile = resolve(values.outfile);
await build({
  entryPoints: [resolve(values.entry)],
  outfile,
  bundle: true,
  format: "esm",
  platform: values.platform,
  target: values.platform === "node" ? "node18" : "es2020",
  jsx: "automatic",
  minify: true,
  define: { "process.env.NODE_ENV": '"production"' },
  // react-dom/server requires Node's modules: give the ES module a require to do it with
  banner: values.platform === "node"
    ? { js: "import { createRequire as __require } from 'node:module'; const require = __require(import.meta.url);" }
    : {},
  plugins: [pick],
  logLevel: "error",
});
const body = readFileSync(outfile);
const react = external ? null : createRequire(join(reactDir, "noop.js"))("react/package.json").version;
console.log(JSON.stringify({ outfile, react, bytes: body.length, gzip: gzipSync(body, { level: 9 }).length }));
