import test from 'node:test';
import assert from 'node:assert/strict';
import { ALLOW_BASE, CONTINUE_MS, REDIRECT_BASE, continueState, limitFor, liveAllowed, pausedLine, ruleUpdate, rulesFor } from '../lib/limits.js';
import { fmtSpent } from '../lib/format.js';

const PAGE = 'chrome-extension://abc/paused.html';
const social = { target_type: 'category', target: 'social', target_name: 'Social networks', period: 'day', limit_ms: 1_800_000, active_ms: 1_920_000, domains: ['social.test', 'chat.test'] };
const video = { target_type: 'domain', target: 'video.test', target_name: 'video.test', period: 'week', limit_ms: 0, active_ms: 0, domains: ['video.test'] };

test('a used-up limit covers its domains and their subdomains, nothing else', () => {
  assert.equal(limitFor([social, video], 'https://www.social.test/feed'), social);
  assert.equal(limitFor([social, video], 'http://m.video.test:8080/watch?v=1'), video);
  assert.equal(limitFor([social, video], 'https://notsocial.test/'), null);
  assert.equal(limitFor([social, video], 'https://social.test.example/'), null);
  assert.equal(limitFor([social], 'chrome://settings'), null);
  assert.equal(limitFor([social], 'not a url'), null);
});

test('one redirect rule per used-up limit for the main frame, the blocked URL after the page\'s #', () => {
  const rules = rulesFor([social, video], {}, PAGE, 0);
  assert.equal(rules.length, 2);
  assert.deepEqual(rules[0], {
    id: REDIRECT_BASE,
    priority: 1,
    action: { type: 'redirect', redirect: { regexSubstitution: `${PAGE}#\\0` } },
    condition: { regexFilter: '^https?://.*$', requestDomains: ['social.test', 'chat.test'], resourceTypes: ['main_frame'] },
  });
  assert.deepEqual(rules[1].condition.requestDomains, ['video.test']);
  assert.deepEqual(rulesFor([{ ...social, domains: [] }], {}, PAGE, 0), [], 'a category with no website recorded yet has no rule');
});

test('"Continue" allows one site over the redirect until it runs out', () => {
  const now = 1_000_000;
  const allowed = { 'social.test': now + CONTINUE_MS, 'old.test': now - 1 };
  assert.deepEqual(liveAllowed(allowed, now), { 'social.test': now + CONTINUE_MS });
  const rules = rulesFor([social], allowed, PAGE, now);
  assert.deepEqual(rules[1], { id: ALLOW_BASE, priority: 2, action: { type: 'allow' }, condition: { requestDomains: ['social.test'], resourceTypes: ['main_frame'] } });
  assert.ok(rules[1].priority > rules[0].priority);
  assert.equal(rulesFor([social], allowed, PAGE, now + CONTINUE_MS).length, 1, 'gone once it ran out');
});

test('rules are replaced only when they change', () => {
  const a = rulesFor([social], {}, PAGE, 0);
  assert.equal(ruleUpdate(a, rulesFor([social], {}, PAGE, 0)), null);
  assert.equal(ruleUpdate([...a].reverse(), a), null, 'order does not matter');
  assert.deepEqual(ruleUpdate(a, []), { removeRuleIds: [REDIRECT_BASE], addRules: [] }, 'failing open removes every rule');
  assert.deepEqual(ruleUpdate([], a), { removeRuleIds: [], addRules: a });
});

test('rules given back by the browser in its own key order, with its defaults, are the same rules', () => {
  const a = rulesFor([social], { 'ok.test': 10 }, PAGE, 0);
  // Chromium sorts the keys (as getSessionRules gave them in the browser test); Firefox adds defaults.
  const sortKeys = (v) =>
    Array.isArray(v) ? v.map(sortKeys) : v && typeof v === 'object' ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, sortKeys(v[k])])) : v;
  const chromium = a.map(sortKeys);
  assert.notEqual(JSON.stringify(chromium), JSON.stringify(a));
  assert.equal(ruleUpdate(chromium, a), null);
  const firefox = a.map((r) => ({ ...r, condition: { ...r.condition, isUrlFilterCaseSensitive: false } }));
  assert.equal(ruleUpdate(firefox, a), null);
  const other = a.map((r) => ({ ...r, condition: { ...r.condition, requestDomains: ['else.test'] } }));
  assert.notEqual(ruleUpdate(other, a), null, 'a rule for other sites is a change');
});

test('"Continue" is offered after the pause, never when strict', () => {
  assert.deepEqual(continueState({ pauseSeconds: 10, strict: false, elapsedMs: 0 }), { offered: true, ready: false, secondsLeft: 10 });
  assert.deepEqual(continueState({ pauseSeconds: 10, strict: false, elapsedMs: 9_001 }), { offered: true, ready: false, secondsLeft: 1 });
  assert.deepEqual(continueState({ pauseSeconds: 10, strict: false, elapsedMs: 10_000 }), { offered: true, ready: true, secondsLeft: 0 });
  assert.deepEqual(continueState({ pauseSeconds: 0, strict: false, elapsedMs: 0 }), { offered: true, ready: true, secondsLeft: 0 });
  assert.deepEqual(continueState({ pauseSeconds: 10, strict: true, elapsedMs: 60_000 }), { offered: false, ready: false, secondsLeft: 0 });
});

test('the paused page says the time and the limit in the app\'s words', () => {
  assert.equal(pausedLine(social, fmtSpent), 'Social networks: 32 min today; your limit is 30 min a day.');
  assert.equal(pausedLine(video, fmtSpent), 'video.test: you set a limit of none at all a week.');
});

test('the pause before "Continue" is kept between none and two minutes; strict only when set', async () => {
  const { normalize, DEFAULTS } = await import('../lib/settings.js');
  assert.equal(normalize(undefined).limitPauseSeconds, 10);
  assert.equal(DEFAULTS.strictLimits, false);
  assert.equal(normalize({ limitPauseSeconds: 500 }).limitPauseSeconds, 120);
  assert.equal(normalize({ limitPauseSeconds: -3 }).limitPauseSeconds, 0);
  assert.equal(normalize({ limitPauseSeconds: 'soon' }).limitPauseSeconds, 10);
  assert.equal(normalize({ strictLimits: 'yes' }).strictLimits, false);
  assert.equal(normalize({ strictLimits: true }).strictLimits, true);
});

test('"Continue" lasts five minutes unless the options say between one and sixty, and its button says so', async () => {
  const { normalize, DEFAULTS } = await import('../lib/settings.js');
  const { continueLabel } = await import('../lib/limits.js');
  assert.equal(DEFAULTS.limitContinueMinutes * 60_000, CONTINUE_MS);
  assert.equal(normalize(undefined).limitContinueMinutes, 5);
  assert.equal(normalize({ limitContinueMinutes: 1 }).limitContinueMinutes, 1);
  assert.equal(normalize({ limitContinueMinutes: 0 }).limitContinueMinutes, 1);
  assert.equal(normalize({ limitContinueMinutes: 600 }).limitContinueMinutes, 60);
  assert.equal(normalize({ limitContinueMinutes: 'later' }).limitContinueMinutes, 5);
  assert.equal(continueLabel(5), 'Continue for 5 minutes');
  assert.equal(continueLabel(1), 'Continue for 1 minute');
});

test('a focus session is held back first, above "Continue", with no "Continue" of its own', async () => {
  const { holdsFrom } = await import('../lib/limits.js');
  const entries = holdsFrom({ limits: [social], focus: { ends_at_ms: 5_000, target_names: ['Social networks', 'Games'], domains: ['game.test', 'social.test'] } });
  assert.equal(entries.length, 2);
  assert.equal(limitFor(entries, 'https://social.test/').focus, true, 'the session speaks first');
  const rules = rulesFor(entries, { 'social.test': 10_000 }, PAGE, 0);
  const focusRule = rules.find((r) => r.condition.requestDomains.includes('game.test'));
  const allow = rules.find((r) => r.action.type === 'allow');
  assert.ok(focusRule.priority > allow.priority, 'Continue on a limit does not open a focus session\'s page');
  assert.deepEqual(continueState({ pauseSeconds: 0, strict: false, elapsedMs: 60_000, focus: true }), { offered: false, ready: false, secondsLeft: 0 });
  assert.equal(pausedLine(entries[0], fmtSpent, () => '14:50'), 'You are focusing until 14:50: Social networks, Games wait until then.');
  assert.deepEqual(holdsFrom({ limits: [social], focus: null }), [social]);
  assert.deepEqual(holdsFrom(undefined), []);
});

test('the popup\'s Focus is 1 minute to 12 hours on a list of targets, the defaults when empty', async () => {
  const { normalize } = await import('../lib/settings.js');
  assert.deepEqual([normalize(undefined).focusMinutes, normalize(undefined).focusBlocks], [50, ['social', 'video_streaming', 'games']]);
  assert.equal(normalize({ focusMinutes: 0 }).focusMinutes, 1);
  assert.equal(normalize({ focusMinutes: 10_000 }).focusMinutes, 720);
  assert.deepEqual(normalize({ focusBlocks: [' Social ', 'social', 'YouTube.com', 7, ''] }).focusBlocks, ['social', 'youtube.com']);
  assert.deepEqual(normalize({ focusBlocks: [] }).focusBlocks, ['social', 'video_streaming', 'games']);
});
