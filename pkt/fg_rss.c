/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Table-driven symmetric Toeplitz.  fg_rss_table was generated from the
 * key by: table[par][v] = XOR over set bits b (MSB first) of v of the
 * 32-bit key window starting at key bit 8*par + b; the unit test checks it
 * against rte_softrss bit for bit.
 */
#include <errno.h>
#include <string.h>

#include <rte_branch_prediction.h>

#include "fg_rss.h"

#define K2 0x6d, 0x5a
const uint8_t fg_rss_key[FG_RSS_KEY_LEN] = {
	K2, K2, K2, K2, K2, K2, K2, K2, K2, K2, K2, K2, K2,
	K2, K2, K2, K2, K2, K2, K2, K2, K2, K2, K2, K2, K2,
};
#undef K2

const uint32_t fg_rss_table[2][256] = {
	{
		0x00000000, 0xad36ad36, 0x569b569b, 0xfbadfbad,
		0xab4dab4d, 0x067b067b, 0xfdd6fdd6, 0x50e050e0,
		0xd5a6d5a6, 0x78907890, 0x833d833d, 0x2e0b2e0b,
		0x7eeb7eeb, 0xd3ddd3dd, 0x28702870, 0x85468546,
		0x6ad36ad3, 0xc7e5c7e5, 0x3c483c48, 0x917e917e,
		0xc19ec19e, 0x6ca86ca8, 0x97059705, 0x3a333a33,
		0xbf75bf75, 0x12431243, 0xe9eee9ee, 0x44d844d8,
		0x14381438, 0xb90eb90e, 0x42a342a3, 0xef95ef95,
		0xb569b569, 0x185f185f, 0xe3f2e3f2, 0x4ec44ec4,
		0x1e241e24, 0xb312b312, 0x48bf48bf, 0xe589e589,
		0x60cf60cf, 0xcdf9cdf9, 0x36543654, 0x9b629b62,
		0xcb82cb82, 0x66b466b4, 0x9d199d19, 0x302f302f,
		0xdfbadfba, 0x728c728c, 0x89218921, 0x24172417,
		0x74f774f7, 0xd9c1d9c1, 0x226c226c, 0x8f5a8f5a,
		0x0a1c0a1c, 0xa72aa72a, 0x5c875c87, 0xf1b1f1b1,
		0xa151a151, 0x0c670c67, 0xf7caf7ca, 0x5afc5afc,
		0xdab4dab4, 0x77827782, 0x8c2f8c2f, 0x21192119,
		0x71f971f9, 0xdccfdccf, 0x27622762, 0x8a548a54,
		0x0f120f12, 0xa224a224, 0x59895989, 0xf4bff4bf,
		0xa45fa45f, 0x09690969, 0xf2c4f2c4, 0x5ff25ff2,
		0xb067b067, 0x1d511d51, 0xe6fce6fc, 0x4bca4bca,
		0x1b2a1b2a, 0xb61cb61c, 0x4db14db1, 0xe087e087,
		0x65c165c1, 0xc8f7c8f7, 0x335a335a, 0x9e6c9e6c,
		0xce8cce8c, 0x63ba63ba, 0x98179817, 0x35213521,
		0x6fdd6fdd, 0xc2ebc2eb, 0x39463946, 0x94709470,
		0xc490c490, 0x69a669a6, 0x920b920b, 0x3f3d3f3d,
		0xba7bba7b, 0x174d174d, 0xece0ece0, 0x41d641d6,
		0x11361136, 0xbc00bc00, 0x47ad47ad, 0xea9bea9b,
		0x050e050e, 0xa838a838, 0x53955395, 0xfea3fea3,
		0xae43ae43, 0x03750375, 0xf8d8f8d8, 0x55ee55ee,
		0xd0a8d0a8, 0x7d9e7d9e, 0x86338633, 0x2b052b05,
		0x7be57be5, 0xd6d3d6d3, 0x2d7e2d7e, 0x80488048,
		0x6d5a6d5a, 0xc06cc06c, 0x3bc13bc1, 0x96f796f7,
		0xc617c617, 0x6b216b21, 0x908c908c, 0x3dba3dba,
		0xb8fcb8fc, 0x15ca15ca, 0xee67ee67, 0x43514351,
		0x13b113b1, 0xbe87be87, 0x452a452a, 0xe81ce81c,
		0x07890789, 0xaabfaabf, 0x51125112, 0xfc24fc24,
		0xacc4acc4, 0x01f201f2, 0xfa5ffa5f, 0x57695769,
		0xd22fd22f, 0x7f197f19, 0x84b484b4, 0x29822982,
		0x79627962, 0xd454d454, 0x2ff92ff9, 0x82cf82cf,
		0xd833d833, 0x75057505, 0x8ea88ea8, 0x239e239e,
		0x737e737e, 0xde48de48, 0x25e525e5, 0x88d388d3,
		0x0d950d95, 0xa0a3a0a3, 0x5b0e5b0e, 0xf638f638,
		0xa6d8a6d8, 0x0bee0bee, 0xf043f043, 0x5d755d75,
		0xb2e0b2e0, 0x1fd61fd6, 0xe47be47b, 0x494d494d,
		0x19ad19ad, 0xb49bb49b, 0x4f364f36, 0xe200e200,
		0x67466746, 0xca70ca70, 0x31dd31dd, 0x9ceb9ceb,
		0xcc0bcc0b, 0x613d613d, 0x9a909a90, 0x37a637a6,
		0xb7eeb7ee, 0x1ad81ad8, 0xe175e175, 0x4c434c43,
		0x1ca31ca3, 0xb195b195, 0x4a384a38, 0xe70ee70e,
		0x62486248, 0xcf7ecf7e, 0x34d334d3, 0x99e599e5,
		0xc905c905, 0x64336433, 0x9f9e9f9e, 0x32a832a8,
		0xdd3ddd3d, 0x700b700b, 0x8ba68ba6, 0x26902690,
		0x76707670, 0xdb46db46, 0x20eb20eb, 0x8ddd8ddd,
		0x089b089b, 0xa5ada5ad, 0x5e005e00, 0xf336f336,
		0xa3d6a3d6, 0x0ee00ee0, 0xf54df54d, 0x587b587b,
		0x02870287, 0xafb1afb1, 0x541c541c, 0xf92af92a,
		0xa9caa9ca, 0x04fc04fc, 0xff51ff51, 0x52675267,
		0xd721d721, 0x7a177a17, 0x81ba81ba, 0x2c8c2c8c,
		0x7c6c7c6c, 0xd15ad15a, 0x2af72af7, 0x87c187c1,
		0x68546854, 0xc562c562, 0x3ecf3ecf, 0x93f993f9,
		0xc319c319, 0x6e2f6e2f, 0x95829582, 0x38b438b4,
		0xbdf2bdf2, 0x10c410c4, 0xeb69eb69, 0x465f465f,
		0x16bf16bf, 0xbb89bb89, 0x40244024, 0xed12ed12,
	},
	{
		0x00000000, 0x36ad36ad, 0x9b569b56, 0xadfbadfb,
		0x4dab4dab, 0x7b067b06, 0xd6fdd6fd, 0xe050e050,
		0xa6d5a6d5, 0x90789078, 0x3d833d83, 0x0b2e0b2e,
		0xeb7eeb7e, 0xddd3ddd3, 0x70287028, 0x46854685,
		0xd36ad36a, 0xe5c7e5c7, 0x483c483c, 0x7e917e91,
		0x9ec19ec1, 0xa86ca86c, 0x05970597, 0x333a333a,
		0x75bf75bf, 0x43124312, 0xeee9eee9, 0xd844d844,
		0x38143814, 0x0eb90eb9, 0xa342a342, 0x95ef95ef,
		0x69b569b5, 0x5f185f18, 0xf2e3f2e3, 0xc44ec44e,
		0x241e241e, 0x12b312b3, 0xbf48bf48, 0x89e589e5,
		0xcf60cf60, 0xf9cdf9cd, 0x54365436, 0x629b629b,
		0x82cb82cb, 0xb466b466, 0x199d199d, 0x2f302f30,
		0xbadfbadf, 0x8c728c72, 0x21892189, 0x17241724,
		0xf774f774, 0xc1d9c1d9, 0x6c226c22, 0x5a8f5a8f,
		0x1c0a1c0a, 0x2aa72aa7, 0x875c875c, 0xb1f1b1f1,
		0x51a151a1, 0x670c670c, 0xcaf7caf7, 0xfc5afc5a,
		0xb4dab4da, 0x82778277, 0x2f8c2f8c, 0x19211921,
		0xf971f971, 0xcfdccfdc, 0x62276227, 0x548a548a,
		0x120f120f, 0x24a224a2, 0x89598959, 0xbff4bff4,
		0x5fa45fa4, 0x69096909, 0xc4f2c4f2, 0xf25ff25f,
		0x67b067b0, 0x511d511d, 0xfce6fce6, 0xca4bca4b,
		0x2a1b2a1b, 0x1cb61cb6, 0xb14db14d, 0x87e087e0,
		0xc165c165, 0xf7c8f7c8, 0x5a335a33, 0x6c9e6c9e,
		0x8cce8cce, 0xba63ba63, 0x17981798, 0x21352135,
		0xdd6fdd6f, 0xebc2ebc2, 0x46394639, 0x70947094,
		0x90c490c4, 0xa669a669, 0x0b920b92, 0x3d3f3d3f,
		0x7bba7bba, 0x4d174d17, 0xe0ece0ec, 0xd641d641,
		0x36113611, 0x00bc00bc, 0xad47ad47, 0x9bea9bea,
		0x0e050e05, 0x38a838a8, 0x95539553, 0xa3fea3fe,
		0x43ae43ae, 0x75037503, 0xd8f8d8f8, 0xee55ee55,
		0xa8d0a8d0, 0x9e7d9e7d, 0x33863386, 0x052b052b,
		0xe57be57b, 0xd3d6d3d6, 0x7e2d7e2d, 0x48804880,
		0x5a6d5a6d, 0x6cc06cc0, 0xc13bc13b, 0xf796f796,
		0x17c617c6, 0x216b216b, 0x8c908c90, 0xba3dba3d,
		0xfcb8fcb8, 0xca15ca15, 0x67ee67ee, 0x51435143,
		0xb113b113, 0x87be87be, 0x2a452a45, 0x1ce81ce8,
		0x89078907, 0xbfaabfaa, 0x12511251, 0x24fc24fc,
		0xc4acc4ac, 0xf201f201, 0x5ffa5ffa, 0x69576957,
		0x2fd22fd2, 0x197f197f, 0xb484b484, 0x82298229,
		0x62796279, 0x54d454d4, 0xf92ff92f, 0xcf82cf82,
		0x33d833d8, 0x05750575, 0xa88ea88e, 0x9e239e23,
		0x7e737e73, 0x48de48de, 0xe525e525, 0xd388d388,
		0x950d950d, 0xa3a0a3a0, 0x0e5b0e5b, 0x38f638f6,
		0xd8a6d8a6, 0xee0bee0b, 0x43f043f0, 0x755d755d,
		0xe0b2e0b2, 0xd61fd61f, 0x7be47be4, 0x4d494d49,
		0xad19ad19, 0x9bb49bb4, 0x364f364f, 0x00e200e2,
		0x46674667, 0x70ca70ca, 0xdd31dd31, 0xeb9ceb9c,
		0x0bcc0bcc, 0x3d613d61, 0x909a909a, 0xa637a637,
		0xeeb7eeb7, 0xd81ad81a, 0x75e175e1, 0x434c434c,
		0xa31ca31c, 0x95b195b1, 0x384a384a, 0x0ee70ee7,
		0x48624862, 0x7ecf7ecf, 0xd334d334, 0xe599e599,
		0x05c905c9, 0x33643364, 0x9e9f9e9f, 0xa832a832,
		0x3ddd3ddd, 0x0b700b70, 0xa68ba68b, 0x90269026,
		0x70767076, 0x46db46db, 0xeb20eb20, 0xdd8ddd8d,
		0x9b089b08, 0xada5ada5, 0x005e005e, 0x36f336f3,
		0xd6a3d6a3, 0xe00ee00e, 0x4df54df5, 0x7b587b58,
		0x87028702, 0xb1afb1af, 0x1c541c54, 0x2af92af9,
		0xcaa9caa9, 0xfc04fc04, 0x51ff51ff, 0x67526752,
		0x21d721d7, 0x177a177a, 0xba81ba81, 0x8c2c8c2c,
		0x6c7c6c7c, 0x5ad15ad1, 0xf72af72a, 0xc187c187,
		0x54685468, 0x62c562c5, 0xcf3ecf3e, 0xf993f993,
		0x19c319c3, 0x2f6e2f6e, 0x82958295, 0xb438b438,
		0xf2bdf2bd, 0xc410c410, 0x69eb69eb, 0x5f465f46,
		0xbf16bf16, 0x89bb89bb, 0x24402440, 0x12ed12ed,
	},
};

#define T0 fg_rss_table[0]
#define T1 fg_rss_table[1]

/* Hash contribution of 4 bytes at an even input position. */
static inline uint32_t h4(const uint8_t *b)
{
	return T0[b[0]] ^ T1[b[1]] ^ T0[b[2]] ^ T1[b[3]];
}

static inline uint32_t h16(const uint8_t *b)
{
	return h4(b) ^ h4(b + 4) ^ h4(b + 8) ^ h4(b + 12);
}

static inline uint32_t hport(uint16_t port_be)
{
	const uint8_t *b = (const uint8_t *)&port_be;

	return T0[b[0]] ^ T1[b[1]];
}

uint32_t fg_rss_hash_v4(uint32_t saddr, uint32_t daddr, uint16_t sport,
			uint16_t dport)
{
	return h4((const uint8_t *)&saddr) ^ h4((const uint8_t *)&daddr) ^
	       hport(sport) ^ hport(dport);
}

uint32_t fg_rss_hash_v6(const uint8_t saddr[16], const uint8_t daddr[16],
			uint16_t sport, uint16_t dport)
{
	return h16(saddr) ^ h16(daddr) ^ hport(sport) ^ hport(dport);
}

uint32_t fg_rss_hash_bytes(const uint8_t *in, uint32_t len)
{
	uint32_t h = 0, i;

	for (i = 0; i < len; i++)
		h ^= fg_rss_table[i & 1][in[i]];
	return h;
}

uint32_t fg_rss_hash(const struct fg_pkt *p)
{
	/* a later fragment's key ports hold its IP ID: its addresses alone,
	 * as its first fragment is dispatched (and as NICs hash fragments) */
	if (unlikely(p->kind == FG_PK_FRAG_LATER))
		return p->family == CT_V6 ?
		       fg_rss_hash_v6(p->key.k6.saddr, p->key.k6.daddr, 0, 0) :
		       fg_rss_hash_v4(p->key.k4.saddr, p->key.k4.daddr, 0, 0);
	if (p->family == CT_V6)
		return fg_rss_hash_v6(p->key.k6.saddr, p->key.k6.daddr,
				      p->key.k6.sport, p->key.k6.dport);
	return fg_rss_hash_v4(p->key.k4.saddr, p->key.k4.daddr,
			      p->key.k4.sport, p->key.k4.dport);
}

int fg_rss_reta_fill(uint16_t *reta, uint16_t nworkers)
{
	unsigned int i;

	if (reta == NULL || nworkers == 0 || nworkers > FG_RSS_RETA_SIZE)
		return -EINVAL;
	for (i = 0; i < FG_RSS_RETA_SIZE; i++)
		reta[i] = (uint16_t)(i % nworkers);
	return 0;
}

/* Walks the range once from start; base = hash of the reply with port 0. */
static int port_search(uint32_t base, const uint16_t *reta, uint16_t target,
		       const struct fg_rss_port_range *r)
{
	uint32_t n, i, p;

	if (unlikely(reta == NULL || r == NULL || r->lo > r->hi))
		return -EINVAL;
	n = (uint32_t)r->hi - r->lo + 1;
	p = (r->start >= r->lo && r->start <= r->hi) ? r->start : r->lo;
	for (i = 0; i < n; i++) {
		uint32_t h = base ^ T0[p >> 8] ^ T1[p & 0xFF];

		if (reta[h & (FG_RSS_RETA_SIZE - 1)] == target)
			return (int)p;
		p = (p == r->hi) ? r->lo : p + 1;
	}
	for (i = 0; i < FG_RSS_RETA_SIZE; i++)
		if (reta[i] == target)
			return -EADDRNOTAVAIL;
	return -EINVAL;
}

int fg_rss_nat_port_pick4(uint32_t backend_addr, uint16_t backend_port,
			  uint32_t local_addr, const uint16_t *reta,
			  uint16_t target, const struct fg_rss_port_range *range)
{
	return port_search(fg_rss_hash_v4(backend_addr, local_addr,
					  backend_port, 0),
			   reta, target, range);
}

int fg_rss_nat_port_pick6(const uint8_t backend_addr[16],
			  uint16_t backend_port, const uint8_t local_addr[16],
			  const uint16_t *reta, uint16_t target,
			  const struct fg_rss_port_range *range)
{
	if (unlikely(backend_addr == NULL || local_addr == NULL))
		return -EINVAL;
	return port_search(fg_rss_hash_v6(backend_addr, local_addr,
					  backend_port, 0),
			   reta, target, range);
}
