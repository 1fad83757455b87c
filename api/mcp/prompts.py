"""What the MCP server tells agents: the instructions sent at ``initialize`` and the three prompts
(``compliance_grounding``, ``memory_guide``, ``brain_workflow``). README.md quotes ``brain_workflow`` whole."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

from ledger.sessions import report as gate

INSTRUCTIONS = (
    "Compliance Ledger: every action you take here is recorded in a hash-chained audit log. "
    "Search memory with memory_search (or memory_recall with a query) before you finish a task, then call "
    "assert_compliance to obtain the "
    "Compliance Stamp and end your response with it. " + gate.GROUNDING_INSTRUCTION
)
MEMORY_GUIDE = """Memory in the Compliance Ledger

Setup (once; safe to repeat): call `memory_setup` (or run `compliance-ledger init`). It stores the 10
constitutional blocks (tag self/constitutional: they never fade), plus your identity (self/context) and
values (self/value) if you pass them. Nothing is stored twice.

Three-tier self-knowledge. What you know about yourself lives in three tiers, chosen by the tags:
- Constitutional (PERMANENT): founding principles, near-immortal. Tag self/constitutional; lambda 0.00001, a
  half-life of ~69,315 active hours (~34 years). They ship with every ledger and are guaranteed a place in the
  self frame. Constitutional amendment requires explicit human action: a person runs
  `compliance-ledger init --force` to regenerate them, or archives and replaces one (`memory archive`,
  `memory supersede`, `memory restore`; administrators only, every change an event).
- Values (DURABLE): learned principles, must be reinforced monthly. Tags self/value, self/constraint,
  self/goal; lambda 0.001, ~693 active hours (~29 days).
- Standard: domain knowledge, must be reinforced every few days. Every other block; lambda 0.010, ~69 active
  hours (~3 days). Observations (category 'observation', lambda 0.050, ~14 active hours) fade fastest.
Constitutional blocks have reserved seats; everything else competes by relevance, so the self frame stays
calibrated to the domain you are working in. The self frame reserves two seats at most (the constitutional
blocks most relevant to your query); your own values take the others, and more of the constitution fills only
seats nothing else can.

The cognitive loop. The 10 constitutional blocks form it. The loop is not sequential — it's a menu of
cognitive tools:

 CURIOSITY ──> CONNECTION ──> UNCERTAINTY
     ^                             |
     |                             v
 REFLECTION    IDENTITY        ECONOMY
     ^                             |
     |                             v
  BALANCE <──── CARE <────── FEEDBACK
                               |
                               v
                          FOCUS (control)

Retrieval surfaces the right principles for the context: encountering unknowns: Curiosity, Uncertainty;
learning something new: Connection, Feedback; making decisions: Economy, Focus, Uncertainty; reviewing
outcomes: Feedback, Care, Balance; pacing/planning: Balance, Economy; new domain entry: Curiosity,
Uncertainty, Connection; session transitions: Reflection. The loop improves you three ways:
- Value discovery: when a pattern proves reliable, `memory_remember` it tagged self/value (Feedback).
- Natural selection: `memory_curate` (and every recall) reinforces what you use; unused values decay and are
  archived, so the self becomes a distillation of what actually works.
- Reflection-driven pruning: at natural transitions recall the self frame and ask which principles you used
  and which you neglected; send a low `memory_outcome` signal for a belief that misled you (it then decays
  twice as fast).

The loop, every task:
1. Recall before you act: `memory_recall` with a query about the task (or `memory_search` for plain ranked
   hits). Read what comes back.
2. Act, citing what you used.
3. Remember what you learned: `memory_remember` with one declarative statement per block and tags such as
   project/<area>. Same content twice is rejected as a duplicate.
4. Tell the ledger how the memories you used worked out: `memory_outcome` with their block ids.
5. Before you finish: `assert_compliance`, and end your response with the stamp it returns.

Frames (`memory_recall` frame=...):
- self: who you are — your identity and values (blocks tagged self/...); the two constitutional blocks most
  relevant to the query are guaranteed a place, the other slots go to the best blocks. Budget 600 tokens.
- attention (default): the most relevant knowledge for the query, or the strongest blocks without one.
  Budget 2000 tokens.
- task: what you are working towards — blocks tagged self/goal are guaranteed a place, then context.
  Budget 800 tokens.
`top_k` (1-50, default 5) caps the blocks; the frame's token budget caps the text. A recall with a query in
your session also earns the session's compliance token, exactly as `memory_search` does (a recall without a
query, or without a session, earns none). Every recall is recorded and reinforces the blocks it returns, so
what you use stays fresh.

Decay and curation: blocks fade with active hours (hours in which some session was active), not calendar
time, so a week away forgets nothing. How fast depends on the tier, which follows from the tags and the
category (above). `memory_curate` archives blocks that have decayed, prunes weak links between
blocks, and reinforces the constitution and the strongest blocks; it also runs by itself every 40 active
hours. Archived blocks are kept in the ledger but no longer recalled.

Outcomes (`memory_outcome`): after using recalled blocks, send their ids with a signal from 1.0 (they
helped) through 0.5 (neutral) to 0.0 (they misled you). Each outcome moves the blocks' confidence, which weighs
in every recall; a signal below 0.2 also makes the blocks decay twice as fast.

Every call is an event in a hash-chained ledger; your recalls, searches, stamps and memories are auditable."""

# Seed 003's monitor-skill update ("MANDATORY Brain Operations"), for this ledger's tools and its verified DNA.
BRAIN_WORKFLOW_GUIDE = """MANDATORY Brain Operations

Workflow tasks are gated on the shared brain. You cannot claim a task before you queried the brain, nor hand it
on before you contributed what you learned: two DNA fields, which the ledger checks against its own events.

| DNA field | required by | its value |
|---|---|---|
| memory_query_session | ready->active, rework->active, testing->active | trace.session_id of your query_brain call |
| memory_contribution_id | active->review, active->approval | trace.thought_id of your contribute_to_brain call |

1. Find a task in status ready or rework (`task_list`) and `clock_in` with your role.
2. Before claiming: `query_brain` with the task's topic, then record the query on the task:
   `task_update_dna` {"task_id": "<task>", "dna": {"memory_query_session": "<trace.session_id>"}}
3. Claim: `task_transition` {"task_id": "<task>", "to_status": "active", "session_id": "<your session>"}.
   The ledger checks that the session is yours and queried memory after the task entered its status.
4. Do the work.
5. Before submitting: `contribute_to_brain` with your key learning, one declarative statement of more than
   50 characters (a question is not stored), then:
   `task_update_dna` {"task_id": "<task>", "dna": {"memory_contribution_id": "<trace.thought_id>"}}
6. Submit: `task_transition` to review (dev) or approval (pdsa). The ledger checks that you contributed
   that thought after the task became active.

Rework clears the memory fields: review->rework and approval->rework remove memory_query_session and
memory_contribution_id, so whoever claims the rework must query the brain again; a query from before the
rework does not count.

If brain is unavailable, wait and retry. Do NOT skip. The brain is infrastructure, like the database: when a
brain tool answers that the store is unavailable (or GET /api/v1/health answers 503), wait and call again.
There is no skip field, and placeholders such as "auto-claim" are refused."""


def register(mcp: MCPServer) -> None:
    """Add the ``compliance_grounding``, ``memory_guide`` and ``brain_workflow`` prompts."""

    @mcp.prompt()
    def compliance_grounding() -> str:
        """The grounding instruction: end every response with a stamp obtained from assert_compliance."""
        return (
            f"{gate.GROUNDING_INSTRUCTION}\n\n"
            "1. Before you finish, call `memory_search` with what your task is about.\n"
            "2. Call `assert_compliance`. If it answers FAIL (⛔ GATE CLOSED), do what it says and call it again.\n"
            "3. End your response with the exact `stamp` text it returned on PASS. Never write a stamp yourself: "
            "every stamp carries a receipt that `verify_stamp` checks against the ledger."
        )

    @mcp.prompt()
    def memory_guide() -> str:
        """How to set up memory and run the cognitive loop."""
        return MEMORY_GUIDE

    @mcp.prompt()
    def brain_workflow() -> str:
        """MANDATORY brain operations for workflow tasks: DNA fields, call sequence, rework, brain unavailable."""
        return BRAIN_WORKFLOW_GUIDE
