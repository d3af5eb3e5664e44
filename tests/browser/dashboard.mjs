// The dashboard in a real browser (Debian's chromium through playwright-core),
// against a live server: node tests/browser/dashboard.mjs URL JOB_ID SCREENSHOTS_DIR.
// tests/dashboard.rs starts the server, its two workers and the enumeration
// JOB_ID; this script prints "kill-worker" when it wants one worker killed.
// Any failed check throws: the exit code is not 0.
// playwright-core is installed by `npm ci --prefix .ci/browser` (a dot folder: the docs'
// checks do not walk its files).
const { chromium } = await import(
  new URL("../../.ci/browser/node_modules/playwright-core/index.mjs", import.meta.url).href);
import { mkdirSync } from "node:fs";

const [url, jobId, shots] = process.argv.slice(2);
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

const browser = await chromium.launch({ executablePath, args: ["--no-sandbox"] });
try {
  const page = await browser.newPage();
  const dialogs = [];
  page.on("dialog", d => { dialogs.push(d.message()); d.dismiss(); });
  const pageErrors = [];
  page.on("pageerror", e => pageErrors.push(String(e)));

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
  await page.click("#cancel-button");
  await page.locator('dd[data-stat="State"]', { hasText: "CANCELLED" }).waitFor({ timeout: 20000 });
  await page.screenshot({ path: `${shots}/job-cancelled.png`, fullPage: true });
  console.log("job: cancelled");

  // The puzzle page: a sample solved and drawn as an image.
  await page.goto(url + "/#puzzle");
  await page.selectOption("#puzzle-kind", "queens");
  await page.click("#solve-button");
  await page.locator("#puzzle-status", { hasText: "solved" }).waitFor({ timeout: 20000 });
  const src = await page.locator("#puzzle-picture img").getAttribute("src");
  check(src.startsWith("data:image/svg+xml"), "the picture is a data: image");
  await page.screenshot({ path: `${shots}/puzzle-queens.png`, fullPage: true });

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
  check(pageErrors.length === 0, "no error in the page: " + pageErrors.join("; "));
} finally {
  await browser.close();
}
console.log("done");
