// Apache Kafka in KRaft mode, one node as broker and controller, from Maven Central's jars.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { EngineError, HOST, PORTS, ROOT, alive, assertPortFree, daemon, dir, has, log, portOpen, readPid, run, seconds, stopPid, waitHealthy } from './lib.mjs';

const POM = join(ROOT, 'scripts', 'engines', 'kafka', 'pom.xml');
/** The one place the version is pinned: the pom's `kafka.version`. */
export const VERSION = /<kafka\.version>([^<]+)<\/kafka\.version>/.exec(readFileSync(POM, 'utf8'))[1];

const home = () => dir('kafka');
const libs = () => join(home(), 'libs');
const installed = () => join(libs(), `.installed-${VERSION}`);
const files = () => ({
  config: join(home(), 'server.properties'),
  data: join(home(), 'data'),
  log: join(home(), 'kafka.log'),
  pid: join(home(), 'kafka.pid'),
});

export const kafka = {
  name: 'kafka',
  label: `Apache Kafka ${VERSION} (KRaft)`,

  missing() {
    const out = [];
    const java = javaVersion();
    if (java === null) out.push('java 17+ to run Kafka (Debian: apt-get install openjdk-17-jre-headless)');
    else if (java < 17) out.push(`java 17+ to run Kafka ${VERSION} (found java ${java})`);
    if (!existsSync(installed()) && !has('mvn')) out.push("mvn to fetch Kafka's jars from Maven Central (Debian: apt-get install maven)");
    return out;
  },

  async running() {
    return alive(readPid(files().pid)) && (await portOpen(PORTS.kafka));
  },

  async start() {
    const f = files();
    await assertPortFree(PORTS.kafka, 'Kafka broker', 'ENGINES_KAFKA_PORT');
    await assertPortFree(PORTS.kafkaController, 'Kafka controller', 'ENGINES_KAFKA_PORT');
    install();
    writeFileSync(f.config, serverProperties(f.data));
    if (!existsSync(join(f.data, 'meta.properties'))) {
      const started = Date.now();
      run(java(), ['-cp', classpath(), 'kafka.tools.StorageTool', 'format', '--cluster-id', clusterId(), '--config', f.config, '--ignore-formatted']);
      log(`kafka: formatted the log directory in ${seconds(started)}`);
    }
    const started = Date.now();
    const pid = daemon(java(), ['-Xms256m', '-Xmx512m', '-Dorg.slf4j.simpleLogger.defaultLogLevel=warn', '-cp', classpath(), 'kafka.Kafka', f.config], {
      logFile: f.log,
      pidFile: f.pid,
      cwd: home(),
    });
    await waitHealthy('Kafka', healthy, { timeoutMs: 90_000, pid, logFile: f.log });
    log(`kafka: healthy on ${HOST}:${PORTS.kafka} in ${seconds(started)} (pid ${pid}, log ${f.log})`);
  },

  async stop() {
    return stopPid(files().pid);
  },

  env() {
    return { KAFKA_BROKERS: `${HOST}:${PORTS.kafka}` };
  },
};

function install() {
  if (existsSync(installed())) return;
  const started = Date.now();
  rmSync(libs(), { recursive: true, force: true });
  log(`kafka: fetching Kafka ${VERSION}'s jars from Maven Central (first use)…`);
  run('mvn', ['-B', '-q', '-f', POM, 'dependency:copy-dependencies', `-DoutputDirectory=${libs()}`]);
  writeFileSync(installed(), `${new Date().toISOString()}\n`);
  log(`kafka: ${readdirSync(libs()).length - 1} jars fetched in ${seconds(started)}`);
}

function java() {
  return process.env.JAVA_HOME ? join(process.env.JAVA_HOME, 'bin', 'java') : 'java';
}

/** The major version of the java on hand, or null without one. */
function javaVersion() {
  const result = spawnSync(java(), ['-version'], { encoding: 'utf8' });
  if (result.error || result.status !== 0) return null;
  const m = /version "(\d+)(?:\.(\d+))?/.exec(result.stderr ?? '');
  if (!m) return null;
  return m[1] === '1' ? Number(m[2]) : Number(m[1]); // "1.8.0" is java 8
}

function classpath() {
  return `${libs()}/*`;
}

/** A KRaft cluster id: 16 random bytes in URL-safe base64 (Kafka refuses one starting with '-'). */
function clusterId() {
  for (;;) {
    const id = randomBytes(16).toString('base64url');
    if (!id.startsWith('-')) return id;
  }
}

function serverProperties(data) {
  return `# Written by scripts/engines/kafka.mjs at each start: one node as broker and KRaft controller, on loopback.
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@${HOST}:${PORTS.kafkaController}
listeners=PLAINTEXT://${HOST}:${PORTS.kafka},CONTROLLER://${HOST}:${PORTS.kafkaController}
advertised.listeners=PLAINTEXT://${HOST}:${PORTS.kafka}
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=${data}
num.partitions=3
offsets.topic.replication.factor=1
offsets.topic.num.partitions=10
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
# A group's first member need not wait 3 s for others (a test server).
group.initial.rebalance.delay.ms=0
`;
}

/**
 * Healthy once the broker answers metadata and its group coordinator is loaded: the first
 * consumer group would otherwise wait for __consumer_offsets to be created.
 */
async function healthy() {
  const { Kafka, logLevel } = await importKafkajs();
  const admin = new Kafka({ clientId: 'engines-health', brokers: [`${HOST}:${PORTS.kafka}`], logLevel: logLevel.NOTHING, retry: { retries: 0 } }).admin();
  try {
    await admin.connect();
    const cluster = await admin.describeCluster();
    if (cluster.brokers.length === 0) return false;
    await admin.describeGroups(['engines-health']);
    return true;
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

async function importKafkajs() {
  try {
    return (await import('kafkajs')).default;
  } catch {
    throw new EngineError('the health check needs kafkajs from node_modules: run npm ci first');
  }
}
