! fifo_waits.c in Fortran (TeaLeaf's language and its halo exchange: requests passed as array
! elements, one array per exchange, left-right tested, up-down posted, then the waits).  Under
! MPICH the Fortran bindings hand the C wrappers the caller's INTEGER request variables: the
! recorder tells apart the two eager isends' shared handle by them.  Odd ranks spin before
! sending, as in fifo_waits.c, so that their neighbours' tests find left-right incomplete.
! usage: fifo_waits_f ITERATIONS
program fifo_waits_f
    use mpi
    implicit none
    integer :: rank, size, left, right, it, iters, ierr, i
    double precision :: x
    integer :: lr(2), ud(2)
    logical :: done
    double precision :: out(8, 2), in(8, 2)
    character(len=16) :: arg
    iters = 100
    if (command_argument_count() > 0) then
        call get_command_argument(1, arg)
        read (arg, *) iters
    end if
    call MPI_Init(ierr)
    call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
    call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
    left = mod(rank + size - 1, size)
    right = mod(rank + 1, size)
    out = 0
    x = 0
    do it = 1, iters
        if (mod(rank, 2) == 1) then
            do i = 1, 20000
                x = x + i * 1d-9
            end do
            out(1, 1) = x
        end if
        call post(out(:, 1), in(:, 1), right, left, 1, lr(1), lr(2))
        call MPI_Testall(2, lr, done, MPI_STATUSES_IGNORE, ierr)
        call post(out(:, 2), in(:, 2), left, right, 2, ud(1), ud(2))
        if (.not. done) call MPI_Waitall(2, lr, MPI_STATUSES_IGNORE, ierr)
        call MPI_Waitall(2, ud, MPI_STATUSES_IGNORE, ierr)
    end do
    call MPI_Finalize(ierr)
contains
    subroutine post(sbuf, rbuf, to, from, tag, req_send, req_recv)
        double precision, intent(inout) :: sbuf(8), rbuf(8)
        integer, intent(in) :: to, from, tag
        integer, intent(inout) :: req_send, req_recv
        call MPI_Isend(sbuf, 8, MPI_DOUBLE_PRECISION, to, tag, MPI_COMM_WORLD, req_send, ierr)
        call MPI_Irecv(rbuf, 8, MPI_DOUBLE_PRECISION, from, tag, MPI_COMM_WORLD, req_recv, ierr)
    end subroutine post
end program fifo_waits_f
