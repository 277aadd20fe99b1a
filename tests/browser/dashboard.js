#!/usr/bin/env node
// Drive headless Chromium (Debian's, through playwright-core) to a trizmq dashboard page.
//
// Usage: node tests/browser/dashboard.js URL SCREENSHOT.png READINGS
// Opens URL, waits until the page has received READINGS readings over its ws://
// subscription, writes a screenshot, and prints one JSON line: what the page shows.
// The browser is $CHROMIUM or /usr/bin/chromium. Exit codes: 0 done, 1 any error.
"use strict"

const { chromium } = require("playwright-core")

async function main() {
  const [url, screenshot, wanted] = process.argv.slice(2)
  if (!url || !screenshot || !wanted) throw new Error("usage: dashboard.js URL PNG READINGS")
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    // no sandbox as root; no background networking (this machine's network is closed)
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  })
  try {
    const page = await browser.newPage({ viewport: { width: 720, height: 400 } })
    const errors = []
    page.on("pageerror", error => errors.push(String(error)))
    await page.goto(url)
    await page.waitForFunction(
      n => Number(document.getElementById("count").textContent) >= n,
      Number(wanted),
      { timeout: 20000 },
    )
    const shown = await page.evaluate(() => {
      const latest = document.getElementById("latest")
      return {
        status: document.getElementById("status").textContent,
        count: Number(document.getElementById("count").textContent),
        seq: Number(latest.dataset.seq),
        value: Number(latest.dataset.value),
        text: latest.textContent,
        points: document.getElementById("line").getAttribute("points").split(" ").length,
      }
    })
    await page.screenshot({ path: screenshot })
    process.stdout.write(JSON.stringify({ ...shown, errors }) + "\n")
  } finally {
    await browser.close()
  }
}

main().catch(error => {
  process.stderr.write(`dashboard.js: ${error.stack || error}\n`)
  process.exit(1)
})
