import { customType, timestamp } from "drizzle-orm/pg-core";

// uids and names compare byte-wise on every back-end: `descendants_of` is a
// prefix range on uid (`>= 'p/' AND < 'p0'`), which only a C-collated btree
// index can serve, and keyset cursors need the same order as ORDER BY.
export const textC = customType<{ data: string; driverData: string }>({
  dataType: () => 'text COLLATE "C"',
});

/** timestamptz with millisecond precision, as the API renders it. */
export const timestampMs = (name: string) => timestamp(name, { precision: 3, withTimezone: true, mode: "date" });
