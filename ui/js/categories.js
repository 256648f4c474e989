// The categories' readable names, as the app's category list gives them: below dom.js and
// colours.js, which both say a category's name.

let categoryNames = new Map();
/** Remembers the category list (id -> readable name). */
export function setCategories(list) {
  categoryNames = new Map(list.map((c) => [c.id, c.name]));
}
/** A category's readable name ("Not classified yet" for none). */
export function categoryName(id) {
  if (!id || id === 'uncategorized') return 'Not classified yet';
  return categoryNames.get(id) || id;
}
