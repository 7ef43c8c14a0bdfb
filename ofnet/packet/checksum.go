package packet

// Checksum returns the Internet checksum of b (RFC 1071): the ones' complement of the
// ones' complement sum of its 16-bit big-endian words, an odd last byte padded with
// zero. Over data that includes a correct checksum field it returns 0.
func Checksum(b []byte) uint16 {
	var sum uint32
	for len(b) >= 2 {
		sum += uint32(b[0])<<8 | uint32(b[1])
		b = b[2:]
	}
	if len(b) == 1 {
		sum += uint32(b[0]) << 8
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}
