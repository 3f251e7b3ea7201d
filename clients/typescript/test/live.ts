// The live server `scripts/test.mjs` started, its callers, and what the demo's refund provider
// and shop show: the external side effect every write test asserts.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";

import { SignoffClient, type DemoLedgerEntry, type ProposalView } from "@signoff/client";

export function env(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run the tests with \`npm test\` (scripts/test.mjs)`);
  return value;
}

export const url = (): string => env("SIGNOFF_URL");

export type Caller = "AGENT" | "ALICE" | "BOB" | "GLOBEX" | "ALICE_OTHER_APP";

export function client(caller: Caller, options: Partial<ConstructorParameters<typeof SignoffClient>[0]> = {}): SignoffClient {
  return new SignoffClient({ baseUrl: url(), token: env(`SIGNOFF_TOKEN_${caller}`), ...options });
}

/** The refund provider's ledger entries for one order (acme, the agent's tenant). */
export async function ledgerOf(orderId: string): Promise<DemoLedgerEntry[]> {
  return (await client("AGENT").demoLedger()).filter((entry) => entry.order_id === orderId);
}

export async function refundedMinor(orderId: string): Promise<number> {
  return (await client("AGENT").demoOrder(orderId)).refunded_minor;
}

export function refund(orderId: string, amountMinor = 19900): Record<string, unknown> {
  return { order_id: orderId, amount_minor: amountMinor, currency: "CNY", reason: null };
}

/** `signoff tools --demo --format <format>` (run once by scripts/test.mjs), parsed: what a model is given. */
export function definitions(format: "openai" | "openai-responses" | "mcp" = "openai"): unknown {
  return JSON.parse(readFileSync(join(env("SIGNOFF_TOOLS_DIR"), `tools-${format}.json`), "utf8"));
}

/** A person who, like one watching the inbox, approves the first proposal for `orderId`. */
export async function approveWhenItArrives(orderId: string, approver = client("ALICE"), withinMs = 30_000): Promise<ProposalView> {
  const deadline = Date.now() + withinMs;
  while (Date.now() < deadline) {
    const shown = (await approver.awaitingConfirmation()).find((proposal) => proposal.arguments["order_id"] === orderId);
    if (shown !== undefined) {
      await approver.approve(shown);
      return shown;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`no proposal for ${orderId} reached the inbox`);
}

export async function proposalsFor(orderId: string): Promise<ProposalView[]> {
  return (await client("AGENT").proposals({ limit: 200 })).filter((proposal) => proposal.arguments["order_id"] === orderId);
}

/** Records each wait the client asks for (tests check the list, never the clock), then waits. */
export function recordingSleep(): { waits: number[]; sleep: (ms: number) => Promise<void> } {
  const waits: number[] = [];
  return {
    waits,
    sleep: async (ms) => {
      waits.push(ms);
      await new Promise((resolve) => setTimeout(resolve, ms));
    },
  };
}

/**
 * The demo refund provider fails its next call as `mode` (signoff.demo's FaultMode, through the
 * project's Python: `retryable`, `terminal`, `timeout_before`, `timeout_after_success`).
 */
export function failNextRefund(mode: "retryable" | "terminal" | "timeout_before" | "timeout_after_success"): void {
  const script = [
    "import sys",
    "from signoff.demo import DemoShop, FaultMode, RefundProvider",
    "shop = DemoShop(sys.argv[1] + '.shop.sqlite')",
    "RefundProvider(shop).fail_next(FaultMode(sys.argv[2]))",
    "shop.close()",
  ].join("\n");
  execFileSync(join(dirname(env("SIGNOFF_BIN")), "python"), ["-c", script, env("SIGNOFF_DEMO_DB"), mode]);
}
