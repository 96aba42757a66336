// The real-browser suite of `toolwarrant review`, run by browser_test.go (go test
// ./test/review/), which starts the page, Debian's chromium (remote debugging on
// loopback) and this script, and afterwards checks the audit log with ssh-keygen.
//
// Environment: REVIEW_URL (the printed URL, with the token), CDP_URL (chromium's DevTools
// WebSocket), TW_BIN and TW_CATALOG (to move the audit head from outside the page),
// ARTIFACTS (screenshots), REPORT (what `review --out` wrote before the page decided), V1 (get_forecast's first, approved digest), SMUGGLED (the
// text send_report's tag characters spell).
//
// Steps run in order, each printing "ok - NAME"; the first failure saves
// fail-NAME.png, prints the error and exits 1. Everything is bounded: every Playwright
// action times out after 15 s, the whole script after 150 s.
import { chromium, request } from 'playwright-core';
import { spawnSync } from 'node:child_process';
import http from 'node:http';
import assert from 'node:assert/strict';

const env = (k) => {
  const v = process.env[k];
  if (!v) throw new Error(`${k} is not set`);
  return v;
};
const REVIEW_URL = env('REVIEW_URL');
const ORIGIN = new URL(REVIEW_URL).origin;
const ARTIFACTS = env('ARTIFACTS');
const V1 = env('V1');

const watchdog = setTimeout(() => {
  console.error('browser.mjs: timed out after 150 s');
  process.exit(2);
}, 150_000);

const browser = await chromium.connectOverCDP(env('CDP_URL'), { timeout: 15_000 });
const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
ctx.setDefaultTimeout(15_000);
const page = await ctx.newPage();
const problems = []; // CSP violations, dialogs, script errors: none may happen on the page
page.on('console', (m) => {
  // The refusals this suite provokes (409, 422) are logged by Chromium as failed loads.
  if (/Failed to load resource: the server responded with a status of (409|422)/.test(m.text())) return;
  if (m.type() === 'error' || /Content Security Policy/i.test(m.text())) problems.push(`console ${m.type()}: ${m.text()}`);
});
page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
page.on('dialog', async (d) => {
  problems.push(`dialog: ${d.message()}`);
  await d.dismiss();
});

let current = page;
async function step(name, fn) {
  try {
    await fn();
    console.log(`ok - ${name}`);
  } catch (e) {
    console.log(`not ok - ${name}`);
    console.log(e && e.stack ? e.stack : String(e));
    try {
      await current.screenshot({ path: `${ARTIFACTS}/fail-${name.replace(/[^a-z0-9]+/gi, '-')}.png`, fullPage: true });
    } catch {}
    process.exit(1);
  }
}

const card = (p, tool) => p.locator('section.card').filter({ has: p.locator('h3 .tool', { hasText: new RegExp(`^${tool}$`) }) });
const head = async (p) => (await p.locator('#head').getAttribute('data-head'));
const shot = (locator, name) => locator.screenshot({ path: `${ARTIFACTS}/${name}.png` });

// Clicks a button that submits a decision and returns the POST's response.
async function submit(p, button) {
  const resp = p.waitForResponse((r) => r.url() === `${ORIGIN}/decide` && r.request().method() === 'POST');
  await button.click();
  const r = await resp;
  await p.waitForLoadState('domcontentloaded');
  return r;
}

// A decision the page recorded: 303 to the page with the result banner.
async function recorded(p, button, kind) {
  const r = await submit(p, button);
  assert.equal(r.status(), 303, `POST /decide answered ${r.status()}`);
  await p.waitForURL(/\/\?r=[0-9a-f]+/);
  const banner = p.locator('#banner.banner-ok');
  await banner.waitFor();
  assert.match(await banner.innerText(), new RegExp(`Recorded: ${kind}`));
  return banner;
}

// The form fields of a card's decision form, as the page rendered them.
async function formOf(c) {
  const f = c.locator('form.decide');
  const v = async (n) => f.locator(`input[name="${n}"]`).getAttribute('value');
  return { csrf: await v('csrf'), head: await v('head'), server: await v('server'), tool: await v('tool'), digest: await v('digest'), current: await v('current'), approved: (await v('approved')) || '' };
}

// Moves the audit head from outside the page: a crawl records an observation.
function crawl() {
  const r = spawnSync(env('TW_BIN'), ['crawl', 'hostile'], {
    env: { ...process.env, TOOLWARRANT_CATALOG: env('TW_CATALOG'), TOOLWARRANT_IDENTITY: 'crawler@test' },
    timeout: 30_000,
    encoding: 'utf8',
  });
  if (r.status !== 0 && r.status !== 1) throw new Error(`toolwarrant crawl: exit ${r.status}: ${r.stderr}`);
}

// --- The token ---------------------------------------------------------------------------

await step('a request without the per-run token is refused', async () => {
  const api = await request.newContext();
  for (const u of [`${ORIGIN}/`, `${ORIGIN}/?token=wrong`, `${ORIGIN}/static/review.js`]) {
    const r = await api.get(u, { maxRedirects: 0 });
    assert.equal(r.status(), 403, `${u}: ${r.status()}`);
    assert.doesNotMatch(await r.text(), /Graded changes|sha256:/);
  }
  // Another name for the same address (DNS rebinding) is refused even with the token.
  const r = await api.get(REVIEW_URL, { headers: { Host: 'rebound.example:80' } });
  assert.equal(r.status(), 421);
  await api.dispose();
});

await step('the printed URL opens the page and becomes a SameSite=Strict cookie', async () => {
  await page.goto(REVIEW_URL);
  await page.waitForURL(`${ORIGIN}/`);
  const cookies = await ctx.cookies(ORIGIN);
  assert.equal(cookies.length, 1);
  assert.equal(cookies[0].httpOnly, true);
  assert.equal(cookies[0].sameSite, 'Strict');
  assert.match(await page.title(), /toolwarrant review: 7 to review, 6 CRITICAL/);
  assert.match(await page.locator('#decider').innerText(), /alice@example\.com, SSH key SHA256:/);
  await page.screenshot({ path: `${ARTIFACTS}/01-overview.png` });
});

// --- What the page shows --------------------------------------------------------------------

await step('hostile text renders inert and visible', async () => {
  const c = card(page, 'render_html');
  const text = await c.innerText();
  // The HTML is there to read, as text.
  assert.ok(text.includes(`<script>window.__pwned='script'</script>`), 'the <script> text is not shown');
  assert.ok(text.includes(`<a href=\\"javascript:window.__pwned='link'\\">click me</a>`), 'the javascript: link text is not shown');
  assert.ok(text.includes(`"><svg onload=window.__pwned='key'>`), 'the hostile member name is not shown');
  // ... and it did nothing.
  const dom = await page.evaluate(() => ({
    pwned: window.__pwned,
    scripts: [...document.scripts].map((s) => s.src),
    handlers: [...document.querySelectorAll('*')].flatMap((e) => [...e.attributes].map((a) => a.name)).filter((n) => n.startsWith('on')),
    links: [...document.querySelectorAll('a[href]')].map((a) => a.getAttribute('href')).filter((h) => !h.startsWith('#') && h !== '/'),
    imgs: document.images.length,
    hidden: /[\u200B-\u200F\u202A-\u202E\u2066-\u2069\uFEFF]|[\u{E0000}-\u{E007F}]/u.test(document.documentElement.outerHTML),
  }));
  assert.equal(dom.pwned, undefined, `hostile text ran: ${dom.pwned}`);
  assert.deepEqual(dom.scripts, [`${ORIGIN}/static/review.js`]);
  assert.deepEqual(dom.handlers, []);
  assert.deepEqual(dom.links, []);
  assert.equal(dom.imgs, 0);
  assert.equal(dom.hidden, false, 'a hidden or bidi character reached the page raw');
  // The bidi overrides are badges with their code points.
  assert.deepEqual(await c.locator('.cp-bidi-control').first().innerText(), 'U+202E');
  assert.ok((await c.locator('.cp-bidi-control').count()) >= 2);
  await shot(c, '02-hostile-html');
});

await step('a tag-character smuggle is shown as badges and the ASCII it spells', async () => {
  const c = card(page, 'send_report');
  const smuggled = env('SMUGGLED');
  assert.ok((await c.locator('.hidden-text q').innerText()).includes(smuggled.trim()));
  assert.ok((await c.locator('.tags-label').first().innerText()).includes(smuggled.trim()));
  assert.equal(await c.locator('pre .tags').first().locator('.cp-tag').count(), [...smuggled].length);
  assert.equal(await c.locator('pre .tags .cp-tag').nth(1).innerText(), 'U+E0041 A');
  await c.locator('label.accept').waitFor();
  await shot(c, '03-tag-smuggle');
});

await step('a look-alike name is marked letter by letter with its script', async () => {
  const c = card(page, 'read_fіle');
  const odd = c.locator('table.letters tr.odd');
  assert.equal(await odd.count(), 1);
  assert.match(await odd.innerText(), /U\+0456\s+Cyrillic/);
  assert.match(await c.locator('.lookalike').innerText(), /Looks like read_file \(same UTS #39 skeleton\)/);
  assert.equal(await c.locator('h3 mark.odd').getAttribute('title'), 'U+0456 Cyrillic');
  await shot(c, '04-lookalike');
});

await step('an annotation flip is called out and the schema diff is a tree', async () => {
  const c = card(page, 'list_files');
  const flips = await c.locator('.flip.danger').allInnerTexts();
  assert.ok(flips.some((f) => /readOnlyHint/.test(f) && /true → false/.test(f)), flips.join('\n'));
  assert.ok(flips.some((f) => /destructiveHint/.test(f) && /false → true/.test(f)), flips.join('\n'));
  const purge = c.locator('.tree li.node.st-added', { has: page.locator('.key', { hasText: /^purge$/ }) });
  assert.equal(await purge.count(), 1);
  assert.match(await c.locator('.tree').innerText(), /additionalProperties: false → true/);
  await shot(c, '05-annotation-flip');
});

await step('the full digest has a copy button', async () => {
  await ctx.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: ORIGIN });
  const c = card(page, 'get_forecast');
  const digest = await c.locator('dl.digests code[data-copy]').first().getAttribute('data-copy');
  assert.match(digest, /^sha256:[0-9a-f]{64}$/);
  const b = c.locator('button.copy').first();
  await b.click();
  await page.waitForFunction((el) => el.textContent !== 'Copy', await b.elementHandle());
  assert.equal(await b.innerText(), 'Copied');
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), digest);
});

await step('the cards are ordered by risk, CRITICAL first, and filters narrow them', async () => {
  const rank = { CRITICAL: 3, WARNING: 2, INFO: 1 };
  // The contents list the cards shown, in page order, each with its grade.
  const grades = async () => page.locator('nav.toc li').evaluateAll((lis) => lis.map((li) => li.querySelector('.badge.sev')?.textContent ?? ''));
  const all = await grades();
  assert.equal(all.length, 7, all.join(','));
  assert.equal(all[0], 'CRITICAL', all.join(','));
  for (let i = 1; i < all.length; i++) assert.ok((rank[all[i - 1]] ?? 0) >= (rank[all[i]] ?? 0), `not ordered by grade: ${all.join(',')}`);
  assert.ok(all.some((g) => g !== 'CRITICAL'), `the fixture has only CRITICAL cards: ${all.join(',')}`);
  const left = await page.locator('#left').innerText();
  const critical = all.filter((g) => g === 'CRITICAL').length;
  assert.match(left, new RegExp(`To review: 7 \\(${critical} CRITICAL, `), left);
  // The cards come in the same order as the contents.
  const ids = await page.locator('nav.toc li a').evaluateAll((as) => as.map((a) => a.getAttribute('href').slice(1)));
  const cards = await page.locator('main > section.card').evaluateAll((cs) => cs.map((c) => c.id));
  assert.deepEqual(cards.slice(0, ids.length), ids);

  await page.locator('form.filters select[name="grade"]').selectOption('critical');
  await page.locator('form.filters button[type="submit"]').click();
  await page.waitForURL(/grade=critical/);
  const only = await grades();
  assert.equal(only.length, critical, only.join(','));
  assert.ok(only.every((g) => g === 'CRITICAL'), only.join(','));
  assert.match(await page.locator('#filtered').innerText(), new RegExp(`Showing ${critical} of 7, CRITICAL and above`));
  assert.match(await page.locator('#left').innerText(), /To review: 7 /); // what is left, not what is shown
  await page.screenshot({ path: `${ARTIFACTS}/02-filtered-critical.png` });

  await page.locator('form.filters select[name="grade"]').selectOption('all');
  await page.locator('form.filters select[name="server"]').selectOption({ label: 'hostile' });
  await page.locator('form.filters button[type="submit"]').click();
  await page.waitForURL(/server=/);
  assert.equal((await grades()).length, 7);
  await page.locator('#filtered a').click();
  await page.waitForURL(`${ORIGIN}/`);
  assert.equal((await grades()).length, 7);
});

// --- Deciding -----------------------------------------------------------------------------

await step('approve', async () => {
  const c = card(page, 'get_forecast');
  const { digest } = await formOf(c);
  const b = await recorded(page, c.getByRole('button', { name: 'Approve', exact: true }), 'approved');
  const t = await b.innerText();
  assert.ok(t.includes(`approved hostile get_forecast ${digest} as alice@example.com`), t);
  assert.match(t, /audit head \d+:[0-9a-f]{64} this page was rendered from/);
  await shot(b, '06-approved');
});

await step('a stale head is refused with 409 and what changed', async () => {
  const before = await head(page);
  crawl(); // the log moves on after the page was rendered
  const c = card(page, 'list_files');
  const r = await submit(page, c.getByRole('button', { name: 'Approve', exact: true }));
  assert.equal(r.status(), 409);
  const banner = page.locator('#banner.banner-stale');
  const t = await banner.innerText();
  assert.match(t, /moved on since the page was rendered/);
  assert.match(t, /Nothing was signed or recorded/);
  assert.match(t, /crawl_observed/);
  assert.match(t, /hostile list_files: still sha256:/);
  assert.notEqual(await head(page), before, 'the refusal re-renders from the new head');
  await page.screenshot({ path: `${ARTIFACTS}/07-stale-409.png` });
  // Read again, decide again: recorded.
  await recorded(page, card(page, 'list_files').getByRole('button', { name: 'Approve', exact: true }), 'approved');
});

await step('suspicious text needs an explicit acceptance', async () => {
  let c = card(page, 'send_report');
  const approve = c.getByRole('button', { name: 'Approve', exact: true });
  // The browser will not submit without the acceptance...
  await approve.click();
  assert.equal(await c.locator('input[name="accept"]').evaluate((e) => e.validity.valueMissing), true);
  assert.match(page.url(), /\?r=/, 'the form was submitted without the acceptance');
  // ... and the page refuses it when the check is taken out of the browser's hands.
  await c.locator('input[name="accept"]').evaluate((e) => e.removeAttribute('required'));
  const r = await submit(page, approve);
  assert.equal(r.status(), 422);
  assert.match(await page.locator('#banner.banner-error').innerText(), /suspicious text was not accepted[\s\S]*Nothing was recorded/);
  // Accepted: recorded, and the statement says so.
  c = card(page, 'send_report');
  await c.locator('input[name="accept"]').check();
  const b = await recorded(page, c.getByRole('button', { name: 'Approve', exact: true }), 'approved');
  assert.match(await b.innerText(), /acceptedSuspicious: true/);
  await shot(b, '08-suspicious-accepted');
});

await step('a request without the CSRF token, or from another origin, changes nothing', async () => {
  const before = await head(page);
  const f = await formOf(card(page, 'read_fіle'));
  const form = { ...f, kind: 'approved', accept: 'yes' };
  // With the cookie (the context's) but without the CSRF token.
  let r = await ctx.request.post(`${ORIGIN}/decide`, { form: { ...form, csrf: '' }, headers: { Origin: ORIGIN }, maxRedirects: 0 });
  assert.equal(r.status(), 403);
  assert.match(await r.text(), /CSRF/);
  // With the cookie and the CSRF token, from another origin.
  r = await ctx.request.post(`${ORIGIN}/decide`, { form, headers: { Origin: 'http://127.0.0.1:9' }, maxRedirects: 0 });
  assert.equal(r.status(), 403);
  assert.match(await r.text(), /Origin/);
  // Without an Origin at all.
  r = await ctx.request.post(`${ORIGIN}/decide`, { form, maxRedirects: 0 });
  assert.equal(r.status(), 403);
  // Without the cookie.
  const api = await request.newContext();
  r = await api.post(`${ORIGIN}/decide`, { form, headers: { Origin: ORIGIN }, maxRedirects: 0 });
  assert.equal(r.status(), 403);
  await api.dispose();

  // A page on another port of 127.0.0.1 is the same site, so the browser sends the cookie:
  // the Origin check refuses it, even with a stolen CSRF token.
  const attacker = http.createServer((req, res) => {
    const fields = Object.entries(form).map(([k, v]) => `<input type="hidden" name="${k}" value="${String(v).replace(/"/g, '&quot;')}">`).join('');
    res.writeHead(200, { 'Content-Type': 'text/html' });
    res.end(`<!doctype html><form id="f" method="post" action="${ORIGIN}/decide">${fields}</form><script>document.getElementById('f').submit()</script>`);
  });
  await new Promise((ok) => attacker.listen(0, '127.0.0.1', ok));
  const port = attacker.address().port;
  try {
    const evil = await ctx.newPage();
    current = evil;
    for (const host of ['127.0.0.1', 'localhost']) {
      const resp = evil.waitForResponse((x) => x.url() === `${ORIGIN}/decide`);
      await evil.goto(`http://${host}:${port}/`);
      const x = await resp;
      assert.equal(x.status(), 403, `from http://${host}:${port}: ${x.status()}`);
      await evil.waitForLoadState('domcontentloaded');
      const body = await evil.locator('body').innerText();
      // 127.0.0.1:port is same-site (cookie sent, Origin refused); localhost is cross-site
      // (SameSite=Strict keeps the cookie back, the token check refuses).
      assert.match(body, host === 'localhost' ? /per-run token/ : /Origin/);
      assert.match(body, /Nothing was changed/);
      if (host === '127.0.0.1') await evil.screenshot({ path: `${ARTIFACTS}/09-cross-origin-refused.png` });
    }
    await evil.close();
    current = page;
  } finally {
    attacker.close();
  }
  await page.reload();
  assert.equal(await head(page), before, 'a refused request moved the audit head');
  assert.equal(await card(page, 'read_fіle').locator('.badge.state').innerText(), 'PENDING');
});

await step('reject', async () => {
  const c = card(page, 'render_html');
  const b = await recorded(page, c.getByRole('button', { name: 'Reject', exact: true }), 'rejected');
  assert.match(await b.innerText(), /rejected hostile render_html sha256:[0-9a-f]{64} as alice@example\.com/);
  await shot(b, '10-rejected');
});

await step('roll back', async () => {
  const c = card(page, 'get_forecast');
  const form = c.locator('form.rollback');
  assert.equal(await form.locator('input[name="digest"]').getAttribute('value'), V1);
  const b = await recorded(page, form.getByRole('button', { name: /^Roll back to sha256:/ }), 'rolled_back');
  assert.ok((await b.innerText()).includes(`rolled_back hostile get_forecast ${V1}`));
  await shot(b, '11-rolled-back');
  assert.equal(await card(page, 'get_forecast').locator('.badge.state').innerText(), 'DRIFT');
});

await step('no CSP violation, script error or dialog on the page', async () => {
  assert.deepEqual(problems, []);
});

// --- JavaScript disabled ------------------------------------------------------------------

await step('with JavaScript disabled the page loads and still approves', async () => {
  const nojs = await browser.newContext({ viewport: { width: 1280, height: 900 }, javaScriptEnabled: false });
  nojs.setDefaultTimeout(15_000);
  const p = await nojs.newPage();
  current = p;
  await p.goto(REVIEW_URL); // the token page moves on by <meta http-equiv="refresh">
  await p.waitForURL(`${ORIGIN}/`);
  assert.equal(await p.locator('button.copy').count(), 0, 'copy buttons exist only with JavaScript');
  const c = card(p, 'read_fіle');
  await c.locator('input[name="accept"]').check();
  const b = await recorded(p, c.getByRole('button', { name: 'Approve', exact: true }), 'approved');
  assert.match(await b.innerText(), /approved hostile read_fіle sha256:[0-9a-f]{64} as alice@example\.com/);
  await p.screenshot({ path: `${ARTIFACTS}/12-nojs-approved.png` });
  await nojs.close();
  current = page;
});

await step('the static report opens styled, with no script and no CSP violation', async () => {
  const p = await ctx.newPage();
  current = p;
  const seen = [];
  p.on('console', (m) => seen.push(`${m.type()}: ${m.text()}`));
  await p.goto(`file://${env('REPORT')}`);
  const r = await p.evaluate(() => ({
    border: getComputedStyle(document.querySelector('section.card')).borderLeftWidth,
    scripts: document.scripts.length,
    forms: document.forms.length,
    cards: document.querySelectorAll('section.card').length,
  }));
  assert.deepEqual(r, { border: '6px', scripts: 0, forms: 0, cards: 7 });
  assert.deepEqual(seen, []);
  await p.screenshot({ path: `${ARTIFACTS}/13-report.png` });
  await p.close();
  current = page;
});

await step('one signature approves the routine first-sight tools a bulk form lists', async () => {
  await page.goto(`${ORIGIN}/`);
  const form = page.locator('form.bulk').first();
  await form.waitFor();
  const tools = await form.locator('input[name="item"]').count();
  assert.ok(tools >= 1, `the bulk form lists ${tools} tools`);
  const resp = page.waitForResponse((r) => r.url() === `${ORIGIN}/approve-all` && r.request().method() === 'POST');
  await form.getByRole('button', { name: /^Approve all \d+ with one signature$/ }).click();
  assert.equal((await resp).status(), 303, 'POST /approve-all');
  await page.waitForURL(/\/\?r=[0-9a-f]+/);
  const b = page.locator('#banner.banner-ok');
  await b.waitFor();
  assert.match(await b.innerText(), new RegExp(`Recorded: ${tools} approvals in one signed statement`));
  await page.screenshot({ path: `${ARTIFACTS}/14-bulk-approved.png` });
  assert.match(await b.innerText(), new RegExp(`approved ${tools} tools of \\S+ as alice@example\\.com, audit entries \\d+ to \\d+`));
  assert.equal(await page.locator('form.bulk').count(), 0, 'a bulk form with nothing routine left');
});

await step('the page after every decision', async () => {
  await page.goto(`${ORIGIN}/`);
  await page.screenshot({ path: `${ARTIFACTS}/15-after.png`, fullPage: true });
});

clearTimeout(watchdog);
await ctx.close();
await browser.close();
console.log('browser.mjs: all steps passed');
