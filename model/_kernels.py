"""The compiled kernels of :mod:`apbbf.model.compiled` (numba, imported only through
:func:`apbbf.model.compiled.kernels`): each has a numpy counterpart that gives the same answers."""

import numba
import numpy as np

__all__ = ["walk_pcap", "walk_pcapng", "classify", "crc64_words", "message_keys", "word_mask", "timed_test_and_insert",
           "timed_schedule", "messages_equal"]

jit = numba.njit(cache=True, nogil=True, boundscheck=False)


@jit
def walk_pcap(data, pos, end, last, snap, big, size, out):
    # the records from pos, one at a time (apbbf.records.walk_pcap), none starting after last: their starts
    # into out, (count, where the walk stopped)
    n = 0
    while pos + size <= end and pos <= last:
        at = pos + 8
        if big:
            caplen = (np.int64(data[at]) << 24) | (np.int64(data[at + 1]) << 16) | \
                (np.int64(data[at + 2]) << 8) | np.int64(data[at + 3])
        else:
            caplen = (np.int64(data[at + 3]) << 24) | (np.int64(data[at + 2]) << 16) | \
                (np.int64(data[at + 1]) << 8) | np.int64(data[at])
        following = pos + size + caplen
        if caplen > snap or following > end:
            break
        out[n] = pos
        n += 1
        pos = following
    return n, pos

@jit
def _u32(data, at, big):
    if big:
        return (np.int64(data[at]) << 24) | (np.int64(data[at + 1]) << 16) | (np.int64(data[at + 2]) << 8) | \
            np.int64(data[at + 3])
    return (np.int64(data[at + 3]) << 24) | (np.int64(data[at + 2]) << 16) | (np.int64(data[at + 1]) << 8) | \
        np.int64(data[at])


@jit
def walk_pcapng(data, pos, end, last, big, out):
    # the packet blocks (enhanced, obsolete) from pos, one at a time (apbbf.capture._read_pcapng's walk), none
    # starting after last, in one section's byte order: their starts into out, (count, where the walk stopped:
    # at a block of another kind, a length that is not a block's, a block cut short, or last)
    n = 0
    while pos + 12 <= end and pos <= last:
        kind = _u32(data, pos, big)
        length = _u32(data, pos + 4, big)
        if (kind != 6 and kind != 2) or length < 12 or length % 4 != 0 or pos + length > end \
                or _u32(data, pos + length - 4, big) != length:
            break
        out[n] = pos
        n += 1
        pos += length
    return n, pos

@jit
def _head16(data, at, limit, pos):
    # bytes pos, pos + 1 of a frame's first 64 (zeros beyond its end), big endian; pos at most 62
    pos = min(pos, 62)
    high = np.int64(data[at + pos]) if pos < limit else 0
    low = np.int64(data[at + pos + 1]) if pos + 1 < limit else 0
    return (high << 8) | low


@jit
def classify(data, offsets, lengths, ethertypes, kind, l3, ip_length):
    # apbbf.model.packet.batch._classify frame by frame (parse's classification from a frame's first 64 bytes):
    # the class (0 other, 1 IPv4, 2 IPv6), the L3 offset (-1 for other) and the IP length
    for i in range(len(offsets)):
        at, n = offsets[i], lengths[i]
        limit = min(n, 64)
        ethernet = ethertypes[i] < 0
        valid = (not ethernet) or n >= 14
        ethertype = _head16(data, at, limit, 12) if ethernet else ethertypes[i]
        p = 14 if ethernet else 0
        for _ in range(2):
            tagged = valid and (ethertype == 0x8100 or ethertype == 0x88A8)
            valid = valid and ((not tagged) or n >= p + 4)
            if tagged and valid:
                ethertype = _head16(data, at, limit, p + 2)
                p += 4
        q = min(p, 63)
        first = np.int64(data[at + q]) if q < limit else 0
        ihl = first & 15
        c = 0
        if valid and ethertype == 0x0800 and n >= p + 20 and first >> 4 == 4 and ihl >= 5 \
                and _head16(data, at, limit, p + 2) >= 4 * ihl:
            c = 1
            ip_length[i] = min(_head16(data, at, limit, p + 2), n - p)
        elif valid and ethertype == 0x86DD and n >= p + 40 and first >> 4 == 6:
            c = 2
            ip_length[i] = min(40 + _head16(data, at, limit, p + 4), n - p)
        else:
            ip_length[i] = 0
        kind[i] = c
        l3[i] = p if c > 0 else -1


@jit
def crc64_words(words, a, b, tables, crc):
    # CRC-64 (reflected) over words[a:b] (little endian) from the register crc: slicing by 8, a word a step
    for j in range(a, b):
        x = crc ^ words[j]
        crc = tables[7, x & 0xFF] ^ tables[6, (x >> 8) & 0xFF] ^ tables[5, (x >> 16) & 0xFF] \
            ^ tables[4, (x >> 24) & 0xFF] ^ tables[3, (x >> 32) & 0xFF] ^ tables[2, (x >> 40) & 0xFF] \
            ^ tables[1, (x >> 48) & 0xFF] ^ tables[0, x >> 56]
    return crc

@jit
def message_keys(data, offsets, starts, counts, mask_ids, masks, first_row, rows, words, tables, init,
                 xor_output, out):
    # the messages as apbbf.model.packet.batch lays them out (each range's bytes from data[offsets[i] +
    # starts[s, i]], counts[s, i] of them, zero-padded to rows of 64 bytes, the first row of each AND-ed with
    # masks[mask_ids[s, i]]; then the trailer of the ranges' lengths, 32 bits each, little endian) into rows,
    # and each message's CRC-64 into out: the rows first (slices: a copy each), then the CRCs over their words
    slots, nf = starts.shape
    flat = rows.reshape(-1)
    for i in range(nf):
        r = first_row[i] * 64
        for s in range(slots):
            c = counts[s, i]
            p = offsets[i] + starts[s, i]
            e = r + ((c + 63) & ~63)
            flat[r:r + c] = data[p:p + c]
            flat[r + c:e] = 0
            m = mask_ids[s, i]
            if m > 0 and c > 0:
                for jj in range(64):
                    flat[r + jj] &= masks[m, jj]
            r = e
        flat[r:r + 64] = 0
        for s in range(slots):
            c = counts[s, i]
            flat[r + 4 * s] = c & 0xFF
            flat[r + 4 * s + 1] = (c >> 8) & 0xFF
            flat[r + 4 * s + 2] = (c >> 16) & 0xFF
            flat[r + 4 * s + 3] = (c >> 24) & 0xFF
    for i in range(nf):
        end = first_row[i + 1] if i + 1 < nf else rows.shape[0]
        out[i] = crc64_words(words, first_row[i] * 8, end * 8, tables, init) ^ xor_output


@jit
def word_mask(x, pos, tables, zero, shift, low):
    # the block (word) and the bits (mask) of the mixed key x in physical segment pos: its b positions, each
    # the zero key's XOR-ed with a table entry per byte of x
    word = 0
    mask = np.uint64(0)
    for lane in range(tables.shape[3]):
        where = np.int64(zero[pos, lane])
        for q in range(8):
            where ^= np.int64(tables[q, (x >> np.uint64(8 * q)) & np.uint64(0xFF), pos, lane])
        if lane == 0:
            word = where >> shift
        mask |= np.uint64(1) << np.uint64(where & low)
    return word, mask

@jit
def timed_test_and_insert(keys, mixer, tables, zero, incs, query_cfg, insert_cfg, fresh, inc_pos, k,
                          block_bits, state, holder, hits):
    # the bulk filter's commands one at a time, in order (apbbf.model.dedup.bulk.TimedTestAndInsert with
    # blocks of 8 to 64 bits): each command's query tests its key's word and mask in the fresh segments of the
    # configuration before its event (Algorithm 1), then its inserts OR them into the k targets of the one
    # after it. state holds each physical segment's blocks (one word each), holder the incarnation whose bits
    # they are (another incarnation there starts empty)
    shift = 0
    while (1 << shift) < block_bits:
        shift += 1
    low = block_bits - 1
    # the word and mask in each insert target, made before the query: it reuses them where it looks at the same
    # segments (no event at this command: the first k it may test are the targets)
    target_word = np.empty(k, dtype=np.int64)
    target_mask = np.empty(k, dtype=np.uint64)
    for j in range(len(keys)):
        x = keys[j]
        for r in range(mixer.shape[0]):
            # the mixer's rounds (HashSpec.mix): each output the XOR of a table entry per input byte
            y = np.uint64(0)
            for q in range(8):
                y ^= mixer[r, q, (x >> np.uint64(8 * q)) & np.uint64(0xFF)]
            x = y
        ic = insert_cfg[j]
        for t in range(k):
            target_word[t], target_mask[t] = word_mask(x, inc_pos[incs[ic, t]], tables, zero, shift, low)
        f = fresh[j]
        if f > 0:
            qc = query_cfg[j]
            same = qc == ic
            i = f - k
            run_before = 0
            run = 0
            while True:
                inc = incs[qc, i]
                pos = inc_pos[inc]
                matched = False
                if holder[pos] == inc:
                    if same and i < k:
                        word, mask = target_word[i], target_mask[i]
                    else:
                        word, mask = word_mask(x, pos, tables, zero, shift, low)
                    matched = (state[pos, word] & mask) == mask
                if matched:
                    run += 1
                    i += 1
                    if run_before + run == k:
                        hits[j] = True
                        break
                else:
                    i -= k
                    run_before = run
                    run = 0
                    if i < 0:
                        break
        for t in range(k):
            inc = incs[ic, t]
            pos = inc_pos[inc]
            if holder[pos] != inc:
                state[pos, :] = 0
                holder[pos] = inc
            state[pos, target_word[t]] |= target_mask[t]


@jit
def timed_schedule(times, gaps, k, g, P, span, interval, live, stamps, stamped, state, incs, old_stamps, started,
                   events, new_pos):
    # apbbf.model.dedup.bulk.TimedTestAndInsert._schedule and _event, compiled: the shifts, retirements and
    # restarts of a call from the times alone. live[:state[15]] the live incarnations, newest first, with their
    # t_j + span (stamps, where stamped); state the scalars (below); each configuration (before each event
    # command, and at the end) into incs, old_stamps (of live[k:]) and started; the event commands into events;
    # the physical position of each incarnation made into new_pos. Returns (configurations, incarnations made)
    on, fill, t_prev, expiry_prev, has_prev, base, next_inc = \
        state[0], state[1], state[3], state[4], state[5], state[6], state[7]
    shift_due, nlive = state[2], state[15]
    made = 0
    records = 0
    n = len(times)
    # configuration 0: before the call
    for i in range(nlive):
        incs[0, i] = live[i]
    for i in range(nlive, incs.shape[1]):
        incs[0, i] = -1
    for i in range(old_stamps.shape[1]):
        old_stamps[0, i] = stamps[k + i] if k + i < nlive else -(1 << 62) * 2
    started[0] = on != 0
    records = 1
    j = 0
    while j < n:
        if on == 0:
            e = j
        else:
            e = j + g - fill
            due = shift_due
            if nlive >= P - 1 and due <= stamps[nlive - 1]:
                due = stamps[nlive - 1] + 1                  # the pool is full: a shift by time waits
            e = min(e, max(j, np.searchsorted(times, due, side="left")))
            at = np.searchsorted(gaps, j, side="left")
            if at < len(gaps):
                e = min(e, gaps[at])
        if e >= n:
            break
        if e > j:
            fill += e - j
            t_prev, expiry_prev, has_prev = times[e - 1], times[e - 1] + span, 1
        # the event at time t: restart, start, shift
        t = times[e]
        previous_expiry = expiry_prev if has_prev else t_prev + span
        if on != 0 and t > previous_expiry:
            state[11] += nlive                                 # expired
            state[12] += 1                                     # restarts
            nlive = k
            for i in range(k):
                new_pos[made] = (base + i) % P
                live[i] = next_inc
                stamps[i] = 0
                stamped[i] = False
                next_inc += 1
                made += 1
            fill, on, shift_due = g, 0, 0
        just_started = on == 0
        if just_started:
            on = 1
        target_expiry = t + span if just_started else previous_expiry
        for i in range(min(k, nlive)):
            stamps[i] = target_expiry
            stamped[i] = True
        if just_started:
            for i in range(k, nlive):
                stamps[i] = t + span
                stamped[i] = True
        while nlive > k and t > stamps[nlive - 1]:
            nlive -= 1
            state[11] += 1                                     # expired
        if nlive >= P - 1:
            nlive -= 1
            state[10] += 1                                     # overflows
        base = (base - 1) % P
        for i in range(nlive, 0, -1):
            live[i] = live[i - 1]
            stamps[i] = stamps[i - 1]
            stamped[i] = stamped[i - 1]
        new_pos[made] = base
        live[0] = next_inc
        stamps[0] = 0
        stamped[0] = False
        next_inc += 1
        made += 1
        nlive += 1
        fill, shift_due = 0, t + interval
        state[9] += 1                                          # shifts
        fill += 1
        t_prev, expiry_prev, has_prev = t, t + span, 1
        events[records - 1] = e
        for i in range(nlive):
            incs[records, i] = live[i]
        for i in range(nlive, incs.shape[1]):
            incs[records, i] = -1
        for i in range(old_stamps.shape[1]):
            old_stamps[records, i] = stamps[k + i] if k + i < nlive else -(1 << 62) * 2
        started[records] = True
        records += 1
        j = e + 1
    if j < n:
        fill += n - j
        t_prev, expiry_prev, has_prev = times[n - 1], times[n - 1] + span, 1
    state[0], state[1], state[2], state[3], state[4], state[5], state[6], state[7] = \
        on, fill, shift_due, t_prev, expiry_prev, has_prev, base, next_inc
    state[15] = nlive
    return records, made


@jit
def messages_equal(rows_a, first_a, count_a, rows_b, first_b, count_b, carried, mine, theirs, out):
    # whether message mine[i] equals message theirs[i] (apbbf.model.packet.MessageRows.equal), numbered across
    # two sets of rows: those below carried in (rows_a, first_a, count_a), the others (less carried) in the b's
    for i in range(len(mine)):
        x, y = mine[i], theirs[i]
        if x < carried:
            rx, fx, nx = rows_a, first_a[x], count_a[x]
        else:
            rx, fx, nx = rows_b, first_b[x - carried], count_b[x - carried]
        if y < carried:
            ry, fy, ny = rows_a, first_a[y], count_a[y]
        else:
            ry, fy, ny = rows_b, first_b[y - carried], count_b[y - carried]
        same = nx == ny
        r = 0
        while same and r < nx:
            for w in range(rx.shape[1]):
                if rx[fx + r, w] != ry[fy + r, w]:
                    same = False
                    break
            r += 1
        out[i] = same
