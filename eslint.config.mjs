import js from "@eslint/js";
import tseslint from "typescript-eslint";

// Layers point down (CONVENTIONS.md): infra/ -> components/ -> the model and pure renderers;
// policy/ uses only the model and renderers. Each block below lists every pattern that applies
// to its files: for a file several blocks match, the last block's list is the one ESLint uses.

/** Files under components/ that declare Pulumi resources or dynamic providers. Every other file
 * there is pure (model, renderers, parsers, plans) and loads no Pulumi SDK. */
const RESOURCE_FILES = [
  "components/index.ts",
  "components/*/index.ts",
  "components/**/provider.ts",
  "components/**/*-provider.ts",
  "components/**/preflight.ts",
  "components/rancher-cluster/cluster-wait.ts",
  "components/ssh/host-step-resource.ts",
];
const COMPONENT_FOLDERS =
  "cluster-dns|libvirt-dns|node-preparation|rancher-cluster|remote-file|rke2-cluster|ssh";

const upward = [
  {
    regex: "(^|/)infra(/|$)",
    message: "components/ and policy/ never import infra/: the program sits above them.",
  },
  { regex: "(^|/)test(/|$)", message: "product code never imports tests." },
];
// Type-only imports load nothing at run time, so they stay allowed.
const sdk = [
  {
    group: ["@pulumi/*"],
    allowTypeImports: true,
    message:
      "pure code (model, renderers, policies' helpers) loads no Pulumi SDK; move the resource part into a resource file.",
  },
];
const resourceFiles = [
  {
    regex: "(^|/)(provider|[a-z0-9-]+-provider|preflight|cluster-wait|host-step-resource)(\\.js)?$",
    allowTypeImports: true,
    message:
      "pure code imports no resource file (it would load the Pulumi SDK); import the pure module that holds what you need.",
  },
  {
    regex: `(^|/)(${COMPONENT_FOLDERS})(/|/index(\\.js)?)?$|^\\.\\.?/?$|^\\.\\.?/index(\\.js)?$`,
    allowTypeImports: true,
    message:
      "a component folder's index declares resources; pure code imports the pure module inside it.",
  },
];
const notPolicy = [
  {
    regex: "(^|/)policy(/|$)",
    message: "components never import the policy pack: it checks them.",
  },
];
const policySdkOnly = [
  {
    group: ["@pulumi/*", "!@pulumi/policy"],
    message: "policies use the policy SDK, the model and renderers only.",
  },
  { group: ["ssh2"], message: "policies open no SSH session." },
  { regex: "(^|/)components/ssh/", message: "policies open no SSH session." },
];

const restrict = (...groups) => ({
  "no-restricted-imports": ["error", { patterns: groups.flat() }],
});

export default tseslint.config(
  {
    ignores: ["node_modules/**", "bin/**", "policy/node_modules/**", "policy/bin/**", "scripts/**"],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    // Plain Node.js scripts (benchmarks, helpers) run outside TypeScript.
    files: ["**/*.js", "**/*.mjs", "**/*.cjs"],
    languageOptions: {
      globals: {
        Buffer: "readonly",
        console: "readonly",
        process: "readonly",
        require: "readonly",
        module: "writable",
        __dirname: "readonly",
        URL: "readonly",
        setTimeout: "readonly",
        clearTimeout: "readonly",
        performance: "readonly",
      },
    },
    rules: { "no-redeclare": ["error", { builtinGlobals: false }] },
  },
  {
    // CommonJS modules load their dependencies with require().
    files: ["**/*.cjs"],
    rules: { "@typescript-eslint/no-require-imports": "off" },
  },
  {
    rules: {
      "@typescript-eslint/no-explicit-any": "error",
      "@typescript-eslint/no-unused-vars": [
        "error",
        { argsIgnorePattern: "^_", varsIgnorePattern: "^_" },
      ],
    },
  },
  {
    // A switch over a union names every member (CONVENTIONS.md: it ends with a `never` check),
    // so a new member fails lint where it is not handled. Type-aware: reads tsconfig.json.
    files: ["components/**/*.ts", "infra/**/*.ts", "policy/**/*.ts"],
    ignores: ["policy/node_modules/**"],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: { "@typescript-eslint/switch-exhaustiveness-check": "error" },
  },
  {
    files: ["components/**/*.ts"],
    rules: restrict(upward, notPolicy),
  },
  {
    files: ["components/**/*.ts"],
    ignores: RESOURCE_FILES,
    rules: restrict(upward, notPolicy, sdk, resourceFiles),
  },
  {
    // The model is the shared vocabulary: it imports nothing outside itself.
    files: ["components/model/**/*.ts"],
    rules: restrict(upward, notPolicy, sdk, resourceFiles, [
      {
        regex: "^\\.\\./",
        message: "the model imports no project module outside components/model.",
      },
    ]),
  },
  {
    // The offline render command and the config checks it runs: renderers only, so it runs
    // without the Pulumi SDK (config/load and the program read Pulumi's config and declare).
    files: [
      "infra/render.ts",
      "infra/cli/render.ts",
      "infra/cli/args.ts",
      "infra/config/stack-file.ts",
      "infra/config/validate.ts",
      "infra/config/reader.ts",
      "infra/config/problems.ts",
    ],
    rules: restrict(sdk, resourceFiles, [
      {
        regex: "(^|/)(load|program|mock-runtime|index)(\\.js)?$",
        message: "the offline render path imports neither the program nor Pulumi's config loader.",
      },
    ]),
  },
  {
    files: ["policy/**/*.ts"],
    ignores: ["policy/node_modules/**"],
    rules: restrict(upward, resourceFiles, policySdkOnly),
  },
  {
    // Policy modules do not construct the pack, so tests can import them (CONVENTIONS.md).
    files: ["policy/policies/**/*.ts"],
    rules: restrict(upward, resourceFiles, policySdkOnly, [
      {
        group: ["@pulumi/policy"],
        importNames: ["PolicyPack"],
        message: "policy modules do not construct the PolicyPack; policy/index.ts does.",
      },
    ]),
  },
);
