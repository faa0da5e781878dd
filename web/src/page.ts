import type { PageRequest } from "@flopsnet/client";

/** page builds a PageRequest: the first `limit` items (newest first when reverse). */
export function page(limit: number, opts: { reverse?: boolean; countTotal?: boolean; key?: Uint8Array } = {}): PageRequest {
  return { key: opts.key ?? new Uint8Array(), offset: 0n, limit: BigInt(limit), countTotal: opts.countTotal ?? false, reverse: opts.reverse ?? false };
}

/** all pages through a list query until it ends or `max` items were read. */
export async function all<T>(
  fetchPage: (p: PageRequest) => Promise<{ items: T[]; nextKey?: Uint8Array }>,
  max = 5000,
): Promise<T[]> {
  const out: T[] = [];
  let key: Uint8Array | undefined;
  do {
    const { items, nextKey } = await fetchPage(page(500, { key }));
    out.push(...items);
    key = nextKey && nextKey.length > 0 ? nextKey : undefined;
  } while (key && out.length < max);
  return out;
}
