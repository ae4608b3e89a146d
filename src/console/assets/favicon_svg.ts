/**
 * The console's icon, embedded and served at a hashed name by `../assets.ts`
 * (linked by every page, so no browser asks for `/favicon.ico`).
 *
 * @module
 */

/** The text of `favicon.<hash>.svg`: a rounded square with a check mark. */
export const FAVICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">
<rect width="32" height="32" rx="6" fill="#0969da"/>
<path d="M9 16.5l4.5 4.5L23 11.5" fill="none" stroke="#ffffff" stroke-width="3.5" stroke-linecap="round" stroke-linejoin="round"/>
</svg>
`;
