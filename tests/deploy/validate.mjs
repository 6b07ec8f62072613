// Offline checks of deploy/ that need npm packages (installed by scripts/setup-debian.sh with
// `npm ci` in tests/deploy; nothing is downloaded here). Run by ctest through check_deploy.sh.
//
//   node validate.mjs k8s RENDERED.yaml...        every object of `kubectl kustomize` output:
//                                                 the kubernetes-models validator (JSON schema
//                                                 from the Kubernetes OpenAPI), then a
//                                                 TypeScript type check of the same object
//                                                 against the model's interface, which catches
//                                                 misspelled keys the schema lets through;
//                                                 plus each daemon's transport security (see
//                                                 checkTransportSecurity)
//   node validate.mjs dashboard DASHBOARD.json   Grafana dashboard typed against @grafana/schema
//                                                 (panel options and field config against each
//                                                 panel plug-in's schema), plus the rules below
//   node validate.mjs same-rules RULES.yml PROMETHEUSRULE.yaml
//                                                 the PrometheusRule's groups equal the rule file's
//   node validate.mjs dockerfile Dockerfile      dockerfile-utils (syntax, instruction checks)
//
// Exit status 0 when everything passes; 1 with one line per problem otherwise.
import { X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { isDeepStrictEqual } from "node:util";

import ts from "typescript";
import { parseAllDocuments, parse as parseYaml } from "yaml";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const problems = [];
const fail = (message) => problems.push(message);

// ---- TypeScript: type-check generated source held in memory, resolved against node_modules ---
function typeCheck(source, label) {
  const fileName = path.join(here, `__${label}__.ts`);
  const options = {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    types: [],
  };
  const host = ts.createCompilerHost(options);
  const readFile = host.readFile.bind(host);
  const getSourceFile = host.getSourceFile.bind(host);
  host.fileExists = ((exists) => (f) => f === fileName || exists(f))(host.fileExists.bind(host));
  host.readFile = (f) => (f === fileName ? source : readFile(f));
  host.getSourceFile = (f, lang, ...rest) =>
    f === fileName ? ts.createSourceFile(f, source, lang, true) : getSourceFile(f, lang, ...rest);
  const program = ts.createProgram([fileName], options, host);
  for (const d of ts.getPreEmitDiagnostics(program)) {
    const text = ts.flattenDiagnosticMessageText(d.messageText, "\n  ");
    let where = "";
    if (d.file && d.start !== undefined && d.file.fileName === fileName) {
      // Name the object: the nearest `// <name>` comment line above the error.
      const { line } = d.file.getLineAndCharacterOfPosition(d.start);
      const lines = source.split("\n");
      for (let i = line; i >= 0; i--) {
        if (lines[i].startsWith("// object: ")) {
          where = lines[i].slice("// object: ".length) + ": ";
          break;
        }
      }
    }
    fail(`${label}: type check: ${where}${text}`);
  }
}

// ---- Kubernetes ------------------------------------------------------------------------------
// Module of the model for apiVersion/kind: core objects live under "v1", groups under their name.
function modelModule(apiVersion, kind) {
  const [group, version] = apiVersion.includes("/") ? apiVersion.split("/") : ["", apiVersion];
  if (group === "monitoring.coreos.com") {
    return `@kubernetes-models/prometheus-operator/${group}/${version}/${kind}`;
  }
  if (group === "cert-manager.io") return `@kubernetes-models/cert-manager/${group}/${version}/${kind}`;
  return group === "" ? `kubernetes-models/${version}/${kind}` : `kubernetes-models/${group}/${version}/${kind}`;
}

// A probe that asks the daemon's gRPC health service: Kubernetes' native gRPC probe (plaintext),
// or `ringside health` on the container's own port with its own TLS flags (the native probe
// speaks no TLS).
function isHealthProbe(probe, container) {
  if (probe?.grpc?.port) return true;
  const command = probe?.exec?.command ?? [];
  const tls = (container.args ?? []).filter((a) => a.startsWith("--tls_"));
  return command[0] === "ringside" && command[1] === "health" &&
    command.some((a) => /^--address=127\.0\.0\.1:\d+$/.test(a)) &&
    tls.length === 3 && tls.every((flag) => command.includes(flag));
}

// What every workload must have: gRPC health probes (readiness and liveness), resource
// requests, Prometheus scrape annotations, and a non-root user.
function checkWorkloadPolicy(object, name) {
  if (!["Deployment", "StatefulSet"].includes(object.kind)) return;
  const pod = object.spec?.template;
  const annotations = pod?.metadata?.annotations ?? {};
  if (annotations["prometheus.io/scrape"] !== "true" || !annotations["prometheus.io/port"]) {
    fail(`${name}: pod template lacks prometheus.io/scrape and prometheus.io/port annotations`);
  }
  if (pod?.spec?.securityContext?.runAsNonRoot !== true) fail(`${name}: runAsNonRoot is not set`);
  for (const container of pod?.spec?.containers ?? []) {
    const where = `${name} container ${container.name}`;
    for (const probe of ["readinessProbe", "livenessProbe"]) {
      if (!isHealthProbe(container[probe], container)) {
        fail(`${where}: ${probe} is neither a gRPC health probe nor \`ringside health\` with ` +
             "the container's TLS flags");
      }
    }
    const requests = container.resources?.requests ?? {};
    if (!requests.cpu || !requests.memory) fail(`${where}: no cpu and memory requests`);
  }
}

// The controller waits for RINGSIDE_WORKERS workers and RINGSIDE_PS_SHARDS shards: they must
// equal the StatefulSets' replicas, or the job never forms.
function checkJobMatchesReplicas(objects, file) {
  const find = (kind, prefix) =>
    objects.find((o) => o.kind === kind && o.metadata?.name?.startsWith(prefix));
  if (!objects.some((o) => o.kind === "StatefulSet")) return;  // e.g. make-certs.sh's Secrets
  const job = find("ConfigMap", "ringside-job")?.data ?? {};
  for (const [key, set] of [["RINGSIDE_WORKERS", "ringside-worker"], ["RINGSIDE_PS_SHARDS", "ringside-ps"]]) {
    const replicas = find("StatefulSet", set)?.spec?.replicas;
    if (String(replicas) !== job[key]) {
      fail(`${file}: ${key}=${job[key]} in the job ConfigMap but ${set} has ${replicas} replicas`);
    }
  }
}

// The controller's --checkpoint_dir must be on a PersistentVolumeClaim rendered with it, and the
// pod must set fsGroup, or the non-root user cannot write the volume.
function checkDurableState(objects, file) {
  const controller = objects.find(
    (o) => o.kind === "Deployment" && o.metadata?.name?.startsWith("ringside-controller"));
  if (!controller) return;
  const pod = controller.spec?.template?.spec ?? {};
  const name = `${file}: Deployment/${controller.metadata.name}`;
  for (const container of pod.containers ?? []) {
    const arg = (container.args ?? []).find((a) => a.startsWith("--checkpoint_dir="));
    if (!arg) {
      fail(`${name} container ${container.name}: no --checkpoint_dir (its durable state)`);
      continue;
    }
    const dir = arg.slice("--checkpoint_dir=".length);
    const mount = (container.volumeMounts ?? []).find(
      (m) => dir === m.mountPath || dir.startsWith(`${m.mountPath}/`));
    const volume = (pod.volumes ?? []).find((v) => v.name === mount?.name);
    const claim = volume?.persistentVolumeClaim?.claimName;
    if (!claim) {
      fail(`${name}: --checkpoint_dir=${dir} is not on a PersistentVolumeClaim volume`);
    } else if (!objects.some((o) => o.kind === "PersistentVolumeClaim" && o.metadata?.name === claim)) {
      fail(`${name}: PersistentVolumeClaim ${claim} is not rendered with it`);
    }
  }
  if (pod.securityContext?.fsGroup === undefined) {
    fail(`${name}: no fsGroup, so the non-root user cannot write its state volume`);
  }
}

// Every daemon chooses its transport security explicitly: --insecure, or all three TLS flags
// with each file on a mounted Secret. Returns the TLS Secrets each workload mounts, with the
// host names its pods are dialled by (a Deployment: its Service's name; a StatefulSet's pods:
// <pod>.<serviceName>), for checkTlsNames.
function checkTransportSecurity(objects, file) {
  const mounts = [];
  for (const o of objects) {
    if (!["Deployment", "StatefulSet"].includes(o.kind)) continue;
    const pod = o.spec?.template?.spec ?? {};
    const name = `${file}: ${o.kind}/${o.metadata?.name}`;
    for (const container of pod.containers ?? []) {
      const args = container.args ?? [];
      const tls = ["--tls_ca=", "--tls_cert=", "--tls_key="].map((f) => args.find((a) => a.startsWith(f)));
      const insecure = args.includes("--insecure");
      if (insecure === tls.some(Boolean) || (!insecure && !tls.every(Boolean))) {
        fail(`${name}: pass either --insecure or all of --tls_ca, --tls_cert, --tls_key`);
        continue;
      }
      if (insecure) continue;
      for (const arg of tls) {
        const path = arg.slice(arg.indexOf("=") + 1);
        const mount = (container.volumeMounts ?? []).find((m) => path.startsWith(`${m.mountPath}/`));
        const secret = (pod.volumes ?? []).find((v) => v.name === mount?.name)?.secret?.secretName;
        if (!secret) {
          fail(`${name}: ${arg} is not on a mounted Secret`);
          continue;
        }
        const hosts = o.kind === "Deployment" ? [o.metadata.name] :
          Array.from({ length: o.spec.replicas ?? 1 },
                     (_, i) => `${o.metadata.name}-${i}.${o.spec.serviceName}`);
        if (!mounts.some((m) => m.secret === secret)) mounts.push({ name, secret, hosts });
      }
    }
  }
  return mounts;
}

// gRPC checks the dialled host against the server's certificate, so the certificate behind each
// mounted TLS Secret must name every host the workload's pods are dialled by, and 127.0.0.1 (the
// probes). The certificate is a cert-manager Certificate rendered with the workload, or, for a
// Secret made by deploy/k8s/make-certs.sh, the tls.crt in it.
function checkTlsNames(mounts, objects, allObjects, file) {
  for (const { name, secret, hosts } of mounts) {
    const certificate = objects.find((o) => o.kind === "Certificate" && o.spec?.secretName === secret);
    const made = allObjects.find((o) => o.kind === "Secret" && o.metadata?.name === secret);
    let names;
    if (certificate) {
      names = [...(certificate.spec.dnsNames ?? []), ...(certificate.spec.ipAddresses ?? [])];
      const usages = certificate.spec.usages ?? [];
      for (const usage of ["server auth", "client auth"]) {
        if (!usages.includes(usage)) fail(`${file}: Certificate ${certificate.metadata.name} lacks usage ${usage}`);
      }
    } else if (made?.data?.["tls.crt"]) {
      const pem = Buffer.from(made.data["tls.crt"], "base64").toString();
      names = (new X509Certificate(pem).subjectAltName ?? "").split(", ")
        .map((n) => n.replace(/^(DNS|IP Address):/, ""));
      if (!made.data["ca.crt"]) fail(`Secret ${secret}: no ca.crt`);
    } else {
      // overlays/tls: its Secrets come from make-certs.sh, checked where they are given.
      if (!allObjects.some((o) => o.kind === "Secret" && o.type === "kubernetes.io/tls")) continue;
      fail(`${name}: no Certificate or Secret makes ${secret}`);
      continue;
    }
    for (const host of [...hosts, "127.0.0.1"]) {
      if (!names.includes(host)) fail(`${name}: the certificate in ${secret} does not name ${host}`);
    }
  }
}

async function checkKubernetes(files) {
  const typed = [];
  const perFile = [];
  let imports = "";
  let count = 0;
  for (const file of files) {
    const objects = [];
    for (const doc of parseAllDocuments(readFileSync(file, "utf8"))) {
      if (doc.errors.length) {
        fail(`${file}: YAML: ${doc.errors[0].message}`);
        continue;
      }
      const object = doc.toJS();
      if (object === null) continue;
      objects.push(object);
      const name = `${file}: ${object.kind}/${object.metadata?.name}`;
      if (!object.apiVersion || !object.kind) {
        fail(`${name}: no apiVersion or kind`);
        continue;
      }
      const module = modelModule(object.apiVersion, object.kind);
      let Model;
      try {
        Model = (await import(module))[object.kind];
      } catch {
        fail(`${name}: no schema for ${object.apiVersion} ${object.kind} (module ${module})`);
        continue;
      }
      try {
        new Model(object).validate();
      } catch (error) {
        fail(`${name}: schema: ${error.message}`);
      }
      checkWorkloadPolicy(object, name);
      const alias = `I${object.kind}_${count}`;
      imports += `import type { I${object.kind} as ${alias} } from "${module}";\n`;
      typed.push(`// object: ${name}\nexport const o${count}: ${alias} = ${JSON.stringify(object, null, 2)};\n`);
      count++;
    }
    checkJobMatchesReplicas(objects, file);
    checkDurableState(objects, file);
    perFile.push({ file, objects });
  }
  const allObjects = perFile.flatMap((f) => f.objects);
  for (const { file, objects } of perFile) {
    checkTlsNames(checkTransportSecurity(objects, file), objects, allObjects, file);
  }
  if (count === 0) fail(`${files.join(", ")}: no objects`);
  typeCheck(imports + typed.join(""), "kubernetes");
  return count;
}

// ---- Grafana ---------------------------------------------------------------------------------
// Panel types the dashboard may use, with the @grafana/schema module and type names of their
// options and field config.
const composable = "@grafana/schema/dist/esm/raw/composable";
const panelSchemas = {
  timeseries: {
    module: `${composable}/timeseries/panelcfg/x/TimeSeriesPanelCfg_types.gen.js`,
    field: true,
  },
  stat: { module: `${composable}/stat/panelcfg/x/StatPanelCfg_types.gen.js`, field: false },
  bargauge: { module: `${composable}/bargauge/panelcfg/x/BarGaugePanelCfg_types.gen.js`, field: false },
};

function checkDashboard(file) {
  const dashboard = JSON.parse(readFileSync(file, "utf8"));
  const ids = new Set();
  const cells = new Map();
  for (const panel of dashboard.panels ?? []) {
    const name = `${file}: panel ${panel.id} "${panel.title}"`;
    if (!(panel.type in panelSchemas)) fail(`${name}: panel type ${panel.type} not checked here`);
    if (ids.has(panel.id)) fail(`${name}: duplicate panel id`);
    ids.add(panel.id);
    const { x, y, w, h } = panel.gridPos ?? {};
    if (![x, y, w, h].every(Number.isInteger) || x < 0 || w < 1 || x + w > 24 || h < 1) {
      fail(`${name}: gridPos ${JSON.stringify(panel.gridPos)} outside the 24-column grid`);
    }
    for (let i = x; i < x + w; i++) {
      for (let j = y; j < y + h; j++) {
        const key = `${i},${j}`;
        if (cells.has(key)) fail(`${name}: overlaps panel ${cells.get(key)}`);
        cells.set(key, panel.id);
      }
    }
    if (!panel.targets?.length) fail(`${name}: no queries`);
    for (const target of panel.targets ?? []) {
      if (typeof target.expr !== "string" || !target.expr.trim()) fail(`${name}: query ${target.refId} has no expr`);
      if (target.datasource?.uid !== "${datasource}") fail(`${name}: query ${target.refId} not on the $datasource variable`);
    }
  }
  // The typed copy: each panel against the generic Panel with its plug-in's option and field
  // config types. Grafana's JSON spells enum members by value ("table"), which TypeScript's
  // string enums refuse, so Loose<> widens every string enum to the union of its values.
  let source = `import type { Dashboard, FieldConfig, FieldConfigSource, Panel } from "@grafana/schema";\n`;
  for (const [type, { module }] of Object.entries(panelSchemas)) {
    source += `import type * as ${type} from "${module}";\n`;
  }
  source += `type Loose<T> = T extends string ? T | \`\${T}\`
    : T extends Array<infer U> ? Array<Loose<U>>
    : T extends object ? { [K in keyof T]: Loose<T[K]> } : T;
type Strict<O, C> = Omit<Panel, "options" | "fieldConfig"> & {
  options: O;
  fieldConfig: Omit<FieldConfigSource, "defaults"> & { defaults: Omit<FieldConfig, "custom"> & { custom?: C } };
};\n`;
  const panels = dashboard.panels ?? [];
  panels.forEach((panel, i) => {
    const types = panelSchemas[panel.type];
    if (!types) return;
    const options = `${panel.type}.Options`;
    const strict = `Strict<${options}, ${types.field ? `${panel.type}.FieldConfig` : "never"}>`;
    source += `// object: panel ${panel.id} "${panel.title}"\n`;
    source += `export const p${i}: Loose<${strict}> = ${JSON.stringify(panel, null, 2)};\n`;
  });
  const rest = { ...dashboard };
  delete rest.panels;
  source += `// object: dashboard\nexport const dashboard: Loose<Omit<Dashboard, "panels">> = ${JSON.stringify(rest, null, 2)};\n`;
  typeCheck(source, "dashboard");
  return panels.length;
}

// ---- PrometheusRule equals the rule file -------------------------------------------------------
function checkSameRules(rulesFile, promRuleFile) {
  const rules = parseYaml(readFileSync(rulesFile, "utf8"));
  const promRule = parseYaml(readFileSync(promRuleFile, "utf8"));
  if (!isDeepStrictEqual(rules.groups, promRule?.spec?.groups)) {
    fail(`${promRuleFile}: spec.groups differ from the groups of ${rulesFile}; copy them over`);
  }
  return rules.groups.length;
}

// ---- Dockerfile ------------------------------------------------------------------------------
async function checkDockerfile(file) {
  const { validate } = require("dockerfile-utils");
  const text = readFileSync(file, "utf8");
  const diagnostics = await validate(text);
  for (const d of diagnostics) {
    fail(`${file}:${d.range.start.line + 1}: ${d.message}`);
  }
  return text.split("\n").filter((l) => /^FROM /i.test(l)).length;
}

const [command, ...args] = process.argv.slice(2);
const commands = {
  k8s: async () => `${await checkKubernetes(args)} Kubernetes objects`,
  dashboard: async () => `${checkDashboard(args[0])} dashboard panels`,
  "same-rules": async () => `${checkSameRules(args[0], args[1])} rule groups`,
  dockerfile: async () => `${await checkDockerfile(args[0])} build stages`,
};
if (!(command in commands) || args.length === 0) {
  console.error(`usage: node validate.mjs ${Object.keys(commands).join("|")} FILE...`);
  process.exit(2);
}
const summary = await commands[command]();
if (problems.length) {
  for (const p of problems) console.error(p);
  console.error(`${command}: ${problems.length} problem(s)`);
  process.exit(1);
}
console.log(`${command}: ok (${summary})`);
