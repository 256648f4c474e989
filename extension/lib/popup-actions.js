// What the popup's links do, apart from the page so node can test it.

/**
 * Opens the options page, then closes the popup: a popup left open over the options page (as
 * Firefox leaves it) hides what the user asked to see. The popup closes even if opening failed,
 * so it never sits there looking as if nothing happened.
 *
 * @param runtime  chrome.runtime (openOptionsPage returns a promise in MV3 Chromium and Firefox)
 * @param close    () => window.close()
 */
export async function openOptionsAndClose(runtime, close) {
  try {
    await runtime.openOptionsPage();
  } catch (e) {
    console.error('sitetrail: could not open the options page', e);
  } finally {
    close();
  }
}
