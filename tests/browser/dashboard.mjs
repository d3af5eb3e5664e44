// The dashboard in a real browser (Debian's chromium through playwright-core),
// against a live server started by tests/dashboard.rs, in one of two runs:
//   node tests/browser/dashboard.mjs tour URL SCREENSHOTS_DIR JOB_ID
//     the server's two workers and the enumeration JOB_ID; this script
//     prints "kill-worker" when it wants one worker killed;
//   node tests/browser/dashboard.mjs keys URL SCREENSHOTS_DIR KEY_A JOB_A KEY_B JOB_B
//     a server with API keys: the page asks for a key, refuses a wrong one,
//     and shows each key's job only.
// Any failed check throws: the exit code is not 0.
// playwright-core is installed by `npm ci --prefix .ci/browser` (a dot folder: the docs'
// checks do not walk its files).
const { chromium } = await import(
  new URL("../../.ci/browser/node_modules/playwright-core/index.mjs", import.meta.url).href);
import { mkdirSync } from "node:fs";

const [mode, url, shots, ...rest] = process.argv.slice(2);
const executablePath = process.env.XCCD_CHROMIUM || "/usr/bin/chromium";
mkdirSync(shots, { recursive: true });

// Waits for `locator` to match `n` elements (the page's CSP forbids the
// eval that page.waitForFunction needs).
async function waitCount(locator, n, what) {
  for (let i = 0; i < 200; i++) {
    if ((await locator.count()) === n) return;
    await new Promise(r => setTimeout(r, 100));
  }
  throw new Error(`check failed: ${what}: ${await locator.count()} not ${n}`);
}

function check(condition, message) {
  if (!condition) throw new Error("check failed: " + message);
}

// What each kind's sample's picture holds (the page's SAMPLES, solved):
// the SVG elements of each class.
const PICTURES = {
  sudoku: { number: 81, box: 9 },
  queens: { queen: 8 },
  latin: { number: 16 },
  futoshiki: { number: 16, sign: 4 },
  hidato: { number: 10, hole: 2, path: 1 },
  hitori: { shaded: 4, number: 12 },
  slitherlink: { loop: 10, clue: 5 },
};

// The alerts and page errors seen: none is expected.
const dialogs = [];
const pageErrors = [];

async function tour(page, jobId) {
  // The job list: the running enumeration, its progress advancing.
  await page.goto(url + "/#jobs");
  const row = page.locator(`#jobs-table tr[data-job="${jobId}"]`);
  await row.locator("td.state", { hasText: "RUNNING" }).waitFor({ timeout: 20000 });
  const nodes = async () => Number((await row.locator("td.nodes").textContent()).replace(/,/g, ""));
  const first = await nodes();
  let later = first;
  for (let i = 0; i < 40 && later <= first; i++) {
    await page.waitForTimeout(250);
    later = await nodes();
  }
  check(later > first, `nodes advance on the job list (${first} then ${later})`);
  await page.screenshot({ path: `${shots}/jobs.png`, fullPage: true });
  console.log(`jobs: nodes ${first} then ${later}`);

  // The workers page: two workers, then one after a kill.
  await page.goto(url + "/#workers");
  const workers = page.locator("#workers-table tbody tr");
  await waitCount(workers, 2, "two workers listed");
  await page.screenshot({ path: `${shots}/workers-two.png`, fullPage: true });
  console.log("kill-worker");
  await waitCount(workers, 1, "one worker after the kill");
  check((await workers.count()) === 1, "one worker after the kill");
  await page.screenshot({ path: `${shots}/workers-one.png`, fullPage: true });
  console.log("workers: two, then one");

  // The job page cancels the enumeration.
  await page.goto(url + "/#job/" + encodeURIComponent(jobId));
  await page.locator('dd[data-stat="State"]', { hasText: "RUNNING" }).waitFor({ timeout: 20000 });
  // Its trace over time: a chart of the samples polled, growing.
  const samples = async () => Number(await page.locator("#job-trace").getAttribute("data-samples"));
  for (let i = 0; i < 40 && (await samples()) < 3; i++) await page.waitForTimeout(250);
  check((await samples()) >= 3, `the trace has samples (${await samples()})`);
  const points = (await page.locator("#job-trace polyline.fraction").getAttribute("points")).split(" ");
  check(points.length >= 3, "the trace's line has a point per sample");
  // Clipped to the statistics and the chart: docs/pictures/dashboard-job.png is one.
  await page.screenshot({ path: `${shots}/job-running.png`, clip: { x: 0, y: 0, width: 560, height: 690 } });
  await page.click("#cancel-button");
  await page.locator('dd[data-stat="State"]', { hasText: "CANCELLED" }).waitFor({ timeout: 20000 });
  await page.screenshot({ path: `${shots}/job-cancelled.png`, fullPage: true });
  console.log("job: cancelled");

  // The puzzle page: each kind's sample solved and drawn, its picture
  // holding what that solution has (tests/pictures.rs checks the renderer).
  await page.goto(url + "/#puzzle");
  for (const [kind, counts] of Object.entries(PICTURES)) {
    await page.selectOption("#puzzle-kind", kind);
    await page.click("#solve-button");
    await page.locator("#puzzle-status", { hasText: "solved" }).waitFor({ timeout: 20000 });
    const src = await page.locator("#puzzle-picture img").getAttribute("src");
    const prefix = "data:image/svg+xml;charset=utf-8,";
    check(src.startsWith(prefix), `the ${kind} picture is a data: image`);
    const drawn = decodeURIComponent(src.slice(prefix.length));
    check(drawn.startsWith("<svg") || drawn.startsWith("<?xml"), `the ${kind} picture is SVG`);
    for (const [name, n] of Object.entries(counts)) {
      const found = drawn.split(`class="${name}"`).length - 1;
      check(found === n, `the ${kind} picture has ${n} ${name} (${found})`);
    }
    const solution = await page.locator("#puzzle-solution").textContent();
    check(solution.trim().length > 0, `the ${kind} solution is shown as text`);
    await page.screenshot({ path: `${shots}/puzzle-${kind}.png`, fullPage: true });
  }
  console.log("puzzle: seven kinds solved and drawn");

  // An enumeration: a job, its solutions drawn as they arrive.
  await page.selectOption("#puzzle-kind", "queens");
  await page.fill("#puzzle-text", "6");
  await page.fill("#enumerate-limit", "0");
  await page.click("#enumerate-button");
  await waitCount(page.locator("#puzzle-solutions img"), 4, "the four 6-queens solutions drawn");
  await page.locator("#puzzle-status", { hasText: "succeeded: 4 solutions" }).waitFor({ timeout: 20000 });
  check((await page.locator("#puzzle-job").count()) === 1, "the enumeration links to its job");
  await page.screenshot({ path: `${shots}/puzzle-enumerated.png`, fullPage: true });
  console.log("puzzle: enumerated, each solution drawn");

  // A longer one: the pictures arrive a poll at a time (50 each), the
  // status following the job.
  await page.fill("#puzzle-text", "12");
  await page.fill("#enumerate-limit", "200");
  await page.click("#enumerate-button");
  const drawnNow = () => page.locator("#puzzle-solutions img").count();
  const seen = new Set();
  for (let i = 0; i < 200 && (await drawnNow()) < 200; i++) {
    seen.add(await drawnNow());
    await page.waitForTimeout(100);
  }
  await waitCount(page.locator("#puzzle-solutions img"), 200, "200 12-queens solutions drawn");
  const partial = [...seen].filter(n => n > 0 && n < 200);
  check(partial.length > 0, "the solutions were drawn as they arrived: " + [...seen].join(", "));
  await page.locator("#puzzle-status", { hasText: "succeeded: 200 solutions" }).waitFor({ timeout: 20000 });
  console.log("puzzle: 200 solutions drawn in steps of " + [...seen].join(", "));

  // Hostile text shows as text: no element made of it, no script run.
  const hostile = `<script>alert("xss-script")</script>\n"><img src=x onerror=alert("xss-img")>`;
  await page.fill("#puzzle-text", hostile);
  await page.click("#solve-button");
  await page.locator("#puzzle-status", { hasText: "refused" }).waitFor({ timeout: 20000 });
  check((await page.locator("#puzzle-echo").textContent()) === hostile, "the text is echoed verbatim");
  check((await page.locator("main script").count()) === 0, "no script element in the page's content");
  check((await page.locator('main img[src="x"]').count()) === 0, "no img element made of the text");
  await page.waitForTimeout(300);
  check(dialogs.length === 0, "no alert ran: " + dialogs.join(", "));
  await page.screenshot({ path: `${shots}/puzzle-hostile.png`, fullPage: true });
  console.log("puzzle: drawn; hostile text shown as text");
}

// Enters `key` in the page's key form.
async function useKey(page, key) {
  await page.locator("#key-form").waitFor({ state: "visible", timeout: 20000 });
  await page.fill("#key-input", key);
  await page.click("#key-form button[type=submit]");
}

async function keys(page, [keyA, jobA, keyB, jobB]) {
  const rowOf = job => page.locator(`#jobs-table tr[data-job="${job}"]`);
  await page.goto(url + "/#jobs");
  await page.locator("#error", { hasText: "takes API keys" }).waitFor({ timeout: 20000 });
  await page.screenshot({ path: `${shots}/keys-asked.png`, fullPage: true });
  await useKey(page, "wrong-key-0123456789");
  await page.locator("#error", { hasText: "API key was refused" }).waitFor({ timeout: 20000 });
  check((await page.locator("#jobs-table tbody tr").count()) === 0, "no job listed for a wrong key");
  await page.screenshot({ path: `${shots}/keys-refused.png`, fullPage: true });
  console.log("keys: asked, a wrong one refused");
  for (const [key, mine, theirs] of [[keyA, jobA, jobB], [keyB, jobB, jobA]]) {
    if (await page.locator("#key-forget").isVisible()) await page.click("#key-forget");
    await useKey(page, key);
    await rowOf(mine).waitFor({ timeout: 20000 });
    await waitCount(page.locator("#jobs-table tbody tr"), 1, "one job listed for the key");
    check((await rowOf(theirs).count()) === 0, "the other key's job is not listed");
    // Nor can its page be read with this key.
    await page.goto(url + "/#job/" + encodeURIComponent(theirs));
    await page.locator("#error", { hasText: "no job" }).waitFor({ timeout: 20000 });
    await page.goto(url + "/#jobs");
  }
  await page.screenshot({ path: `${shots}/keys-own-jobs.png`, fullPage: true });
  console.log("keys: each key sees its own job only");
}

const browser = await chromium.launch({ executablePath, args: ["--no-sandbox"] });
try {
  const page = await browser.newPage({ ignoreHTTPSErrors: true });
  page.on("dialog", d => { dialogs.push(d.message()); d.dismiss(); });
  page.on("pageerror", e => pageErrors.push(String(e)));
  if (mode === "tour") await tour(page, rest[0]);
  else if (mode === "keys") await keys(page, rest);
  else throw new Error("unknown mode " + mode);
  check(dialogs.length === 0, "no alert ran: " + dialogs.join(", "));
  check(pageErrors.length === 0, "no error in the page: " + pageErrors.join("; "));
} finally {
  await browser.close();
}
console.log("done");
