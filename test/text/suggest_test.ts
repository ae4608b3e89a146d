import { deepEqual as assertEquals } from "node:assert/strict";
import { didYouMean, editDistance, nearest } from "../../src/text/suggest.ts";

Deno.test("editDistance() counts a swap of neighbours as one edit", () => {
  assertEquals(editDistance("mial", "mail"), 1);
  assertEquals(editDistance("mail", "mail"), 0);
  assertEquals(editDistance("", "abc"), 3);
  assertEquals(editDistance("Europe/Berln", "Europe/Berlin"), 1);
});

Deno.test("nearest() keeps typos and drops unrelated names, nearest first", () => {
  assertEquals(nearest("mial", ["mail", "default", "reports"]), ["mail"]);
  assertEquals(nearest("xyz", ["mail", "default"]), []);
  assertEquals(nearest("emai", ["email", "mail", "default"]), ["email"]);
  assertEquals(nearest("mai", ["email", "mail", "default"]), ["mail", "email"]);
});

Deno.test("didYouMean() quotes names and joins several with or", () => {
  assertEquals(didYouMean("mial", ["mail"]), '; did you mean "mail"?');
  assertEquals(didYouMean("mai", ["mail", "main"]), '; did you mean "mail" or "main"?');
  assertEquals(didYouMean("zzzzzz", ["mail"]), "");
});
