// Package review holds the real-browser tests of `toolwarrant review`: the built binary
// serves the page over a catalog crawled from a hostile fixture server, Debian's chromium
// runs headless, and a Playwright script (browser.mjs, playwright-core pinned in
// test/package.json) clicks through it. Screenshots are saved under test/review/artifacts/.
package review
